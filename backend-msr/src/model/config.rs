//! What a model models: the PMU kinds and their configuration (counters, widths, version,
//! the CPUID answers that describe them).

use std::fmt;

use crate::cpuid::{CpuidDump, CpuidResult, CpuidSource};
use crate::regs::fixed_ctrl;
use counterhal_x86::width_mask;

/// The TSC frequency of every model: 2 GHz (2 ticks per nanosecond).
pub const MODEL_TSC_HZ: u64 = 2_000_000_000;

/// The modelled PMUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PmuModelKind {
    /// Intel architectural perfmon v4 (Skylake-like, family 6 model 0x5E): 4 GP + 3 fixed
    /// counters, 48 bits, global control, full-width writes.
    IntelV4,
    /// Intel architectural perfmon v2 (Core 2-like, family 6 model 0x17): 2 GP + 3 fixed
    /// counters, 40 bits, global control, no full-width writes (PMC writes sign-extend bit 31).
    IntelV2,
    /// Intel architectural perfmon v1 (Core Duo-like, family 6 model 0x0E): 2 GP counters x
    /// 40 bits, no fixed counters, no global control (each counter starts and stops by its EN
    /// bit), no full-width writes.
    IntelV1,
    /// Intel architectural perfmon v5-like (family 6 model 0x8F): 4 GP counters x 48 bits,
    /// full-width writes, and fixed counters 0 and 2 but not 1, announced by the fixed-counter
    /// bitmap of CPUID.0AH:ECX (EDX\[4:0\] = 1, ECX = 0b101); AnyThread is gone (EDX bit 15).
    IntelV5,
    /// AMD legacy (K10-like, family 0x10): 4 counters x 48 bits, no global control.
    AmdLegacy,
    /// AMD Zen 4-like (family 0x19 model 0x11): 6 core counters x 48 bits, PerfMonV2 global
    /// control; the legacy MSRs alias counters 0-3.
    AmdZen,
}

impl PmuModelKind {
    /// Every model.
    pub const ALL: [PmuModelKind; 6] = [
        PmuModelKind::IntelV4,
        PmuModelKind::IntelV2,
        PmuModelKind::IntelV1,
        PmuModelKind::IntelV5,
        PmuModelKind::AmdLegacy,
        PmuModelKind::AmdZen,
    ];

    /// `intel-v4`, `intel-v2`, `intel-v1`, `intel-v5`, `amd-legacy`, `amd-zen`.
    pub fn name(self) -> &'static str {
        match self {
            PmuModelKind::IntelV4 => "intel-v4",
            PmuModelKind::IntelV2 => "intel-v2",
            PmuModelKind::IntelV1 => "intel-v1",
            PmuModelKind::IntelV5 => "intel-v5",
            PmuModelKind::AmdLegacy => "amd-legacy",
            PmuModelKind::AmdZen => "amd-zen",
        }
    }

    /// The model with this name.
    pub fn from_name(name: &str) -> Option<PmuModelKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The model's configuration (which a test may alter before building the model).
    pub fn config(self) -> ModelConfig {
        let intel = |version, gp, width, fw, model, stepping| ModelConfig {
            name: self.name().to_string(),
            amd: false,
            version,
            gp_counters: gp,
            gp_width: width,
            fixed_counters: 3,
            fixed_bitmap: 0,
            fixed_width: width,
            full_width_writes: fw,
            core_ext: false,
            cpus: 2,
            family: 6,
            model,
            stepping,
            umask2: false,
            hybrid_core_cpus: None,
            hybrid_atom_counters: None,
        };
        let amd = |version, gp, core_ext, family, model, stepping| ModelConfig {
            name: self.name().to_string(),
            amd: true,
            version,
            gp_counters: gp,
            gp_width: 48,
            fixed_counters: 0,
            fixed_bitmap: 0,
            fixed_width: 0,
            full_width_writes: false,
            core_ext,
            cpus: 2,
            family,
            model,
            stepping,
            umask2: false,
            hybrid_core_cpus: None,
            hybrid_atom_counters: None,
        };
        match self {
            PmuModelKind::IntelV4 => intel(4, 4, 48, true, 0x5E, 3),
            PmuModelKind::IntelV2 => intel(2, 2, 40, false, 0x17, 10),
            PmuModelKind::IntelV1 => ModelConfig {
                fixed_counters: 0,
                fixed_width: 0,
                ..intel(1, 2, 40, false, 0x0E, 8)
            },
            PmuModelKind::IntelV5 => ModelConfig {
                fixed_counters: 1,
                fixed_bitmap: 0b101,
                ..intel(5, 4, 48, true, 0x8F, 8)
            },
            PmuModelKind::AmdLegacy => amd(1, 4, false, 0x10, 0x2, 3),
            PmuModelKind::AmdZen => amd(2, 6, true, 0x19, 0x11, 1),
        }
    }
}

impl fmt::Display for PmuModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a model models. Build one from [`PmuModelKind::config`] and adjust fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    /// A name for reports.
    pub name: String,
    /// AMD (else Intel).
    pub amd: bool,
    /// Intel: the architectural perfmon version; AMD: 2 for PerfMonV2, else 1.
    pub version: u32,
    /// General-purpose counters.
    pub gp_counters: u32,
    /// Their width.
    pub gp_width: u32,
    /// Intel fixed counters (version 2 and later): counters `0..fixed_counters` exist
    /// (CPUID.0AH:EDX\[4:0\]).
    pub fixed_counters: u32,
    /// Intel version 5 and later: more fixed counters that exist, bit `i` = fixed counter `i`
    /// (CPUID.0AH:ECX), so the set may have gaps. Ignored before version 5.
    pub fixed_bitmap: u32,
    /// Their width.
    pub fixed_width: u32,
    /// Intel: IA32_PERF_CAPABILITIES bit 13 (IA32_A_PMCx exist).
    pub full_width_writes: bool,
    /// AMD: the extended core counters at 0xC0010200.
    pub core_ext: bool,
    /// Logical CPUs.
    pub cpus: u32,
    /// Display family.
    pub family: u32,
    /// Display model.
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
    /// Intel: the second unit-mask byte, EVTSEL bits 47:40 (UMASK2), announced through
    /// CPUID.7.1:EAX\[8\] and CPUID.23H:EBX\[0\] (Lion Cove and later cores).
    pub umask2: bool,
    /// Intel: a hybrid chip (CPUID.7.0:EDX\[15\]) whose CPUs below this number are Core
    /// cores (CPUID.1AH:EAX core type 0x40) and the others Atom cores (0x20), each answering
    /// CPUID for itself ([`ModelConfig::cpuid_of`]). Both kinds have this configuration's
    /// counters (but see `hybrid_atom_counters`). `None`: not hybrid.
    pub hybrid_core_cpus: Option<u32>,
    /// On a hybrid model, how many general counters the Atom cores have, where fewer than the
    /// Core cores' (`gp_counters`): their CPUID says so and the registers past them are
    /// refused there (Alder Lake: 8 and 6). `None`: the same.
    pub hybrid_atom_counters: Option<u32>,
}

impl ModelConfig {
    pub(super) fn global_control(&self) -> bool {
        self.version >= 2
    }

    pub(super) fn gp_mask(&self) -> u64 {
        width_mask(self.gp_counters)
    }

    /// The fixed counters that exist (bit `i` = fixed counter `i`): the first
    /// `fixed_counters`, plus `fixed_bitmap` from version 5. None before version 2.
    pub fn fixed_set(&self) -> u32 {
        if self.amd || self.version < 2 {
            return 0;
        }
        let mut set = width_mask(self.fixed_counters.min(32)) as u32;
        if self.version >= 5 {
            set |= self.fixed_bitmap;
        }
        set
    }

    pub(super) fn global_mask(&self) -> u64 {
        self.gp_mask() | (u64::from(self.fixed_set()) << 32)
    }

    /// The bits of IA32_FIXED_CTR_CTRL this CPU implements: OS, USR and PMI for each fixed
    /// counter, and AnyThread in versions 3 and 4 only.
    pub(super) fn fixed_ctrl_valid(&self) -> u64 {
        let mut field = fixed_ctrl::OS | fixed_ctrl::USR | fixed_ctrl::PMI;
        if (3..=4).contains(&self.version) {
            field |= fixed_ctrl::ANY;
        }
        let set = self.fixed_set();
        (0..32)
            .filter(|j| set & (1 << j) != 0 && *j < 16)
            .fold(0, |mask, j| mask | (field << (4 * j)))
    }

    /// The CPUID answers of the modelled CPU (leaves 0, 1, 0xA and 0x15 for Intel, with 7.1
    /// and 0x23 when it has UMASK2; 0, 1 and
    /// the extended leaves 0x80000000, 0x80000001, 0x80000022 for AMD).
    pub fn cpuid(&self) -> CpuidDump {
        let mut dump = CpuidDump::new(format!("model {}", self.name));
        let (family_base, family_ext) = if self.family >= 0xF {
            (0xF, self.family - 0xF)
        } else {
            (self.family, 0)
        };
        let leaf1_eax = (family_ext << 20)
            | ((self.model >> 4) << 16)
            | (family_base << 8)
            | ((self.model & 0xF) << 4)
            | self.stepping;
        let vendor = if self.amd {
            *b"AuthenticAMD"
        } else {
            *b"GenuineIntel"
        };
        let word =
            |i: usize| u32::from_le_bytes([vendor[i], vendor[i + 1], vendor[i + 2], vendor[i + 3]]);
        if self.amd {
            dump.insert(0, 0, CpuidResult::new(0x10, word(0), word(8), word(4)));
            dump.insert(1, 0, CpuidResult::new(leaf1_eax, 0, 0, 0));
            let max_ext = if self.version >= 2 {
                0x8000_0022
            } else {
                0x8000_0001
            };
            dump.insert(
                0x8000_0000,
                0,
                CpuidResult::new(max_ext, word(0), word(8), word(4)),
            );
            let ecx = if self.core_ext { 1 << 23 } else { 0 };
            dump.insert(0x8000_0001, 0, CpuidResult::new(leaf1_eax, 0, ecx, 0));
            if self.version >= 2 {
                dump.insert(0x8000_0022, 0, CpuidResult::new(1, self.gp_counters, 0, 0));
            }
        } else {
            let max_basic = if self.umask2 { 0x23 } else { 0x15 };
            dump.insert(0, 0, CpuidResult::new(max_basic, word(0), word(8), word(4)));
            if self.umask2 {
                dump.insert(7, 1, CpuidResult::new(1 << 8, 0, 0, 0));
                dump.insert(0x23, 0, CpuidResult::new(1, 1, 0, 0));
            }
            // ECX bit 15: PDCM (IA32_PERF_CAPABILITIES exists); from version 2 only.
            let pdcm = if self.version >= 2 { 1 << 15 } else { 0 };
            dump.insert(1, 0, CpuidResult::new(leaf1_eax, 0, pdcm, 0));
            let eax = (7 << 24) | (self.gp_width << 16) | (self.gp_counters << 8) | self.version;
            let mut edx = if self.version >= 2 {
                (self.fixed_width << 5) | self.fixed_counters
            } else {
                0
            };
            // Version 5: EDX bit 15 says AnyThread is deprecated; ECX is the fixed bitmap.
            let mut ecx = 0;
            if self.version >= 5 {
                edx |= 1 << 15;
                ecx = self.fixed_bitmap;
            }
            dump.insert(0xA, 0, CpuidResult::new(eax, 0, ecx, edx));
            // 25 MHz crystal x 80 / 1 = 2 GHz.
            dump.insert(0x15, 0, CpuidResult::new(1, 80, 25_000_000, 0));
        }
        dump
    }

    /// The general counters CPU `cpu` has: fewer on a hybrid model's Atom cores where
    /// `hybrid_atom_counters` says so.
    pub fn gp_counters_of(&self, cpu: u32) -> u32 {
        match (self.hybrid_core_cpus, self.hybrid_atom_counters) {
            (Some(core_cpus), Some(atom)) if cpu >= core_cpus => atom.min(self.gp_counters),
            _ => self.gp_counters,
        }
    }

    /// CPUID as CPU `cpu` answers it: [`ModelConfig::cpuid`], and on a hybrid chip the
    /// hybrid bit (leaf 7 EDX bit 15) and the CPU's own core type in leaf 0x1A (native model
    /// id 1).
    pub fn cpuid_of(&self, cpu: u32) -> CpuidDump {
        let mut dump = self.cpuid();
        if let (Some(core_cpus), false) = (self.hybrid_core_cpus, self.amd) {
            let leaf0 = dump.cpuid(0, 0).unwrap_or_default();
            let max_basic = leaf0.eax.max(0x1A);
            dump.insert(
                0,
                0,
                CpuidResult::new(max_basic, leaf0.ebx, leaf0.ecx, leaf0.edx),
            );
            dump.insert(7, 0, CpuidResult::new(0, 0, 0, 1 << 15));
            let core_type: u32 = if cpu < core_cpus { 0x40 } else { 0x20 };
            dump.insert(0x1A, 0, CpuidResult::new((core_type << 24) | 1, 0, 0, 0));
            if let Some(atom) = self.hybrid_atom_counters.filter(|_| cpu >= core_cpus) {
                let leaf_a = dump.cpuid(0xA, 0).unwrap_or_default();
                let eax = (leaf_a.eax & !0xff00) | (atom << 8);
                dump.insert(
                    0xA,
                    0,
                    CpuidResult::new(eax, leaf_a.ebx, leaf_a.ecx, leaf_a.edx),
                );
            }
        }
        dump
    }
}
