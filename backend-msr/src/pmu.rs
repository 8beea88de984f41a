//! What PMU a CPU has, decoded from CPUID: vendor, architecture, version, counters, widths.

use counterhal_hal::Evtsel;
use std::fmt;

use counterhal_events::{CpuIdentity, Vendor};
use counterhal_hal::{CounterSet, Error, Result};
pub use counterhal_x86::signature::cpu_identity;
use counterhal_x86::signature::{Identified, identify};
pub use counterhal_x86::tsc::{TscFrequency, TscSource};

use crate::cpuid::CpuidSource;
use crate::regs::{self, evtsel};

/// The most general-purpose counters this crate drives on Intel (IA32_PERFEVTSEL0..7).
pub const INTEL_MAX_GP: u32 = 8;
/// The most fixed counters this crate drives on Intel (IA32_FIXED_CTR0..3).
pub const INTEL_MAX_FIXED: u32 = 4;
/// The most core counters this crate drives on AMD (the 6 documented extended counters).
pub const AMD_MAX_GP: u32 = 6;

/// The family of PMU register layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PmuArch {
    /// Intel architectural performance monitoring (CPUID leaf 0xA).
    IntelArch,
    /// AMD legacy counters: PerfEvtSel0-3 at 0xC0010000, PerfCtr0-3 at 0xC0010004.
    AmdLegacy,
    /// AMD extended core counters at 0xC0010200 (CPUID 0x80000001 ECX bit 23).
    AmdCore,
}

/// A CPU's performance monitoring unit, as CPUID describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuInfo {
    /// Vendor, family, model, stepping (CPUID leaves 0 and 1).
    pub identity: CpuIdentity,
    /// The register layout.
    pub arch: PmuArch,
    /// Intel: the architectural perfmon version (CPUID.0xA:EAX\[7:0\]). AMD: 2 with PerfMonV2,
    /// else 1.
    pub version: u32,
    /// General-purpose counters per logical CPU (capped at what this crate drives).
    pub gp_counters: u32,
    /// Their width in bits.
    pub gp_width: u32,
    /// The fixed counters that exist (bit `i` = IA32_FIXED_CTRi); empty on AMD and Intel v1.
    pub fixed: CounterSet,
    /// Their width in bits (0 when there are none).
    pub fixed_width: u32,
    /// Intel: architectural events CPUID.0xA:EBX marks as unavailable (bit `i` = event `i`),
    /// within the EBX length; events at or past the length are unavailable too.
    pub arch_events_unavailable: u32,
    /// Intel: how many EBX bits are valid (CPUID.0xA:EAX\[31:24\]).
    pub arch_events_length: u32,
    /// Whether a global control register gates the counters (Intel v2+, AMD PerfMonV2).
    pub global_control: bool,
    /// Intel: IA32_PERF_CAPABILITIES exists (CPUID.1:ECX.PDCM).
    pub perf_capabilities: bool,
    /// Intel: full-width counter writes through IA32_A_PMCx (PERF_CAPABILITIES bit 13). Set by
    /// the backend after reading the MSR; CPUID alone cannot say.
    pub full_width_writes: bool,
    /// Intel: TSX (IN_TX / IN_TX_CP event select bits exist: CPUID.7.0:EBX RTM or HLE).
    pub tsx: bool,
    /// Intel: the second unit-mask byte, EVTSEL bits 47:40 (UMASK2: the architectural perfmon
    /// extension, CPUID.7.1:EAX\[8\], says so in CPUID.23H.0:EBX\[0\]).
    pub umask2: bool,
    /// CPUID.1:ECX\[31\]: running under a hypervisor.
    pub hypervisor: bool,
    /// The TSC frequency from CPUID 0x15 / 0x16, when the CPU says.
    pub cpuid_tsc: Option<TscFrequency>,
}

impl PmuInfo {
    /// Decodes the PMU from CPUID.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::Unsupported`] for a vendor other than Intel or AMD, or an Intel CPU without
    /// architectural performance monitoring (version 0, as in a VM without a virtual PMU);
    /// errors of the source.
    pub fn from_cpuid(cpuid: &dyn CpuidSource) -> Result<PmuInfo> {
        let Identified {
            identity,
            max_basic_leaf: max_basic,
            leaf1,
        } = identify(cpuid)?;
        let hypervisor = leaf1.ecx & (1 << 31) != 0;
        let perf_capabilities = leaf1.ecx & (1 << 15) != 0;
        let vm_hint = if hypervisor {
            "this CPU runs under a hypervisor: enable its virtual PMU"
        } else {
            "the CPU has no architectural performance monitoring"
        };
        match identity.vendor {
            Vendor::Intel => {
                if max_basic < 0xA {
                    return Err(Error::unsupported(format!(
                        "{identity}: no CPUID leaf 0xA (maximum basic leaf {max_basic:#x})"
                    ))
                    .with_hint(vm_hint));
                }
                let a = cpuid.cpuid(0xA, 0)?;
                let version = a.eax & 0xFF;
                if version == 0 {
                    return Err(Error::unsupported(format!(
                        "{identity}: CPUID leaf 0xA reports architectural perfmon version 0"
                    ))
                    .with_hint(vm_hint));
                }
                let gp_counters = ((a.eax >> 8) & 0xFF).min(INTEL_MAX_GP);
                let gp_width = (a.eax >> 16) & 0xFF;
                let arch_events_length = a.eax >> 24;
                let length_mask = if arch_events_length >= 32 {
                    u32::MAX
                } else {
                    (1 << arch_events_length) - 1
                };
                let (fixed, fixed_width) = if version >= 2 {
                    let count = (a.edx & 0x1F).min(INTEL_MAX_FIXED);
                    let mut mask = CounterSet::first(count).mask();
                    if version >= 5 {
                        mask |= a.ecx & CounterSet::first(INTEL_MAX_FIXED).mask();
                    }
                    (CounterSet::from_mask(mask), (a.edx >> 5) & 0xFF)
                } else {
                    (CounterSet::NONE, 0)
                };
                // RTM (bit 11) or HLE (bit 4), as the kernel reads them.
                let tsx = max_basic >= 7 && cpuid.cpuid(7, 0)?.ebx & (1 << 11 | 1 << 4) != 0;
                let umask2 = max_basic >= 0x23
                    && cpuid.cpuid(7, 1)?.eax & (1 << 8) != 0
                    && cpuid.cpuid(0x23, 0)?.ebx & 1 != 0;
                let cpuid_tsc = TscFrequency::from_cpuid(cpuid, max_basic)?;
                Ok(PmuInfo {
                    identity,
                    arch: PmuArch::IntelArch,
                    version,
                    gp_counters,
                    gp_width,
                    fixed,
                    fixed_width,
                    arch_events_unavailable: (a.ebx & length_mask) | !length_mask,
                    arch_events_length,
                    global_control: version >= 2,
                    perf_capabilities,
                    full_width_writes: false,
                    tsx,
                    umask2,
                    hypervisor,
                    cpuid_tsc,
                })
            }
            Vendor::Amd => {
                let max_ext = cpuid.cpuid(0x8000_0000, 0)?.eax;
                let core_ext =
                    max_ext >= 0x8000_0001 && cpuid.cpuid(0x8000_0001, 0)?.ecx & (1 << 23) != 0;
                let mut perfmon_v2 = false;
                let mut v2_counters = 0;
                if max_ext >= 0x8000_0022 {
                    let leaf = cpuid.cpuid(0x8000_0022, 0)?;
                    perfmon_v2 = leaf.eax & 1 != 0;
                    v2_counters = leaf.ebx & 0xF;
                }
                let gp_counters = if perfmon_v2 && v2_counters > 0 {
                    v2_counters.min(AMD_MAX_GP)
                } else if core_ext {
                    6
                } else {
                    4
                };
                Ok(PmuInfo {
                    identity,
                    arch: if core_ext || perfmon_v2 {
                        PmuArch::AmdCore
                    } else {
                        PmuArch::AmdLegacy
                    },
                    version: if perfmon_v2 { 2 } else { 1 },
                    gp_counters,
                    gp_width: 48,
                    fixed: CounterSet::NONE,
                    fixed_width: 0,
                    arch_events_unavailable: 0,
                    arch_events_length: 0,
                    global_control: perfmon_v2,
                    perf_capabilities: false,
                    full_width_writes: false,
                    tsx: false,
                    umask2: false,
                    hypervisor,
                    cpuid_tsc: None,
                })
            }
            Vendor::Arm(_) | Vendor::Other(_) => Err(Error::unsupported(format!(
                "CPU vendor `{}`: raw MSR counting knows Intel and AMD PMUs only",
                identity.vendor
            ))),
        }
    }

    /// Whether this is an AMD layout.
    pub fn is_amd(&self) -> bool {
        matches!(self.arch, PmuArch::AmdLegacy | PmuArch::AmdCore)
    }

    /// The number of fixed counters (`fixed.len()`).
    pub fn fixed_counters(&self) -> u32 {
        self.fixed.len()
    }

    /// The event select MSR of general-purpose counter `index`.
    pub fn evtsel_msr(&self, index: u32) -> u32 {
        match self.arch {
            PmuArch::IntelArch => regs::IA32_PERFEVTSEL0 + index,
            PmuArch::AmdLegacy => regs::AMD_PERF_EVT_SEL0 + index,
            PmuArch::AmdCore => regs::AMD_PERF_CTL_EXT0 + 2 * index,
        }
    }

    /// The MSR that reads general-purpose counter `index`.
    pub fn counter_msr(&self, index: u32) -> u32 {
        match self.arch {
            PmuArch::IntelArch => regs::IA32_PMC0 + index,
            PmuArch::AmdLegacy => regs::AMD_PERF_CTR0 + index,
            PmuArch::AmdCore => regs::AMD_PERF_CTR_EXT0 + 2 * index,
        }
    }

    /// The MSR that loads general-purpose counter `index` with a full-width value, when there
    /// is one (IA32_A_PMCx with full-width writes; AMD counters always take full width).
    pub fn counter_full_write_msr(&self, index: u32) -> Option<u32> {
        match self.arch {
            PmuArch::IntelArch => self.full_width_writes.then_some(regs::IA32_A_PMC0 + index),
            _ => Some(self.counter_msr(index)),
        }
    }

    /// The global control, status and overflow-clear MSRs, when there are.
    pub fn global_msrs(&self) -> Option<(u32, u32, u32)> {
        if !self.global_control {
            return None;
        }
        Some(match self.arch {
            PmuArch::IntelArch => (
                regs::IA32_PERF_GLOBAL_CTRL,
                regs::IA32_PERF_GLOBAL_STATUS,
                regs::IA32_PERF_GLOBAL_OVF_CTRL,
            ),
            _ => (
                regs::AMD_GLOBAL_CTL,
                regs::AMD_GLOBAL_STATUS,
                regs::AMD_GLOBAL_STATUS_CLR,
            ),
        })
    }

    /// The bit of general-purpose counter `index` in the global registers.
    pub fn gp_global_bit(&self, index: u32) -> u64 {
        1 << index
    }

    /// The bit of fixed counter `index` in the global registers (Intel).
    pub fn fixed_global_bit(&self, index: u32) -> u64 {
        1 << (32 + index)
    }

    /// Every enable bit the global control register has.
    pub fn global_enable_mask(&self) -> u64 {
        let gp = u64::from(CounterSet::first(self.gp_counters).mask());
        gp | (u64::from(self.fixed.mask()) << 32)
    }

    /// The event select bits a valid encoding may set on this PMU. INT (bit 20) is never
    /// among them: nothing here handles the overflow interrupt.
    pub fn evtsel_allowed_bits(&self) -> u64 {
        let common = evtsel::EVENT
            | evtsel::UMASK
            | Evtsel::USR
            | Evtsel::OS
            | Evtsel::EDGE
            | Evtsel::PC
            | Evtsel::EN
            | Evtsel::INV
            | Evtsel::CMASK;
        match self.arch {
            PmuArch::IntelArch => {
                let mut bits = common;
                if (3..=4).contains(&self.version) {
                    bits |= Evtsel::ANY;
                }
                if self.tsx {
                    bits |= evtsel::IN_TX | evtsel::IN_TX_CP;
                }
                if self.umask2 {
                    bits |= Evtsel::UMASK2;
                }
                bits
            }
            _ => common | Evtsel::EVENT_HIGH | Evtsel::GUEST_ONLY | Evtsel::HOST_ONLY,
        }
    }

    /// A one-line description: `intel arch perfmon v4: 4 x 48-bit + 3 fixed x 48-bit`.
    pub fn summary(&self) -> String {
        let layout = match self.arch {
            PmuArch::IntelArch => format!("intel arch perfmon v{}", self.version),
            PmuArch::AmdLegacy => "amd legacy counters".to_string(),
            PmuArch::AmdCore if self.version >= 2 => "amd core counters, PerfMonV2".to_string(),
            PmuArch::AmdCore => "amd core counters".to_string(),
        };
        let mut text = format!("{layout}: {} x {}-bit", self.gp_counters, self.gp_width);
        if !self.fixed.is_empty() {
            text.push_str(&format!(
                " + {} fixed x {}-bit",
                self.fixed.len(),
                self.fixed_width
            ));
        }
        text
    }
}

impl fmt::Display for PmuInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.summary(), self.identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::{CpuidDump, CpuidResult};
    use counterhal_hal::ErrorKind;

    fn intel_with_leaf_a(eax: u32, ebx: u32, ecx: u32, edx: u32) -> CpuidDump {
        let mut dump = CpuidDump::new("synthetic");
        dump.insert(
            0,
            0,
            CpuidResult::new(0xA, 0x756e_6547, 0x6c65_746e, 0x4965_6e69),
        );
        dump.insert(1, 0, CpuidResult::new(0x0005_06e3, 0, 0, 0));
        dump.insert(0xA, 0, CpuidResult::new(eax, ebx, ecx, edx));
        dump
    }

    #[test]
    fn version_zero_is_unsupported() {
        let error = PmuInfo::from_cpuid(&intel_with_leaf_a(0, 0, 0, 0)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.message().contains("version 0"), "{error}");
    }

    #[test]
    fn version_one_has_no_fixed_or_global() {
        let pmu = PmuInfo::from_cpuid(&intel_with_leaf_a(0x0728_0201, 0, 0, 0x603)).unwrap();
        assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (1, 2, 40));
        assert!(pmu.fixed.is_empty());
        assert!(!pmu.global_control);
        assert_eq!(pmu.global_msrs(), None);
    }

    #[test]
    fn version_five_fixed_bitmap_and_caps() {
        // 10 GP counters reported: capped at 8. EDX says 2 fixed; ECX adds fixed counter 3.
        let pmu = PmuInfo::from_cpuid(&intel_with_leaf_a(0x0830_0a05, 0x0, 0b1000, 0x602)).unwrap();
        assert_eq!(pmu.gp_counters, INTEL_MAX_GP);
        assert_eq!(pmu.fixed.mask(), 0b1011);
        assert_eq!(
            pmu.evtsel_allowed_bits() & Evtsel::ANY,
            0,
            "AnyThread is gone in v5"
        );
        // EBX length 8: every event available.
        assert_eq!(pmu.arch_events_unavailable, 0xFFFF_FF00);
    }

    #[test]
    fn other_vendors_are_unsupported() {
        let mut dump = CpuidDump::new("via");
        let b = u32::from_le_bytes(*b"Cent");
        let d = u32::from_le_bytes(*b"aurH");
        let c = u32::from_le_bytes(*b"auls");
        dump.insert(0, 0, CpuidResult::new(1, b, c, d));
        let error = PmuInfo::from_cpuid(&dump).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.message().contains("CentaurHauls"), "{error}");
    }
}
