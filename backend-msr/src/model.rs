//! PMU models: the device seam's stand-in where no MSR driver exists.
//!
//! A model is written from the documented behaviour of the registers (Intel SDM vol. 3,
//! "Performance Monitoring"; AMD PPR): it keeps per-CPU register state, answers EIO (as the msr
//! driver does for a #GP) for any MSR the modelled CPU does not implement and for writes that
//! set reserved bits, gates counting on the EN bits, the fixed-counter control fields and the
//! global control register, wraps counters at their width and sets the overflow status bits.
//!
//! Work is fed in by a test through a [`ModelHandle`]: "N events of code X with unit mask Y in
//! user mode" ([`ModelHandle::feed`]). Every enabled counter programmed with that event code
//! and unit mask (exact match; edge, invert and counter-mask are not modelled) counts them, as
//! do the fixed counters for their architectural events (0: instructions 0xC0/0x00, 1: core
//! cycles 0x3C/0x00, 2: reference cycles 0x3C/0x01) where they exist: on a version 5 model
//! the fixed counters are a set that may have gaps ([`ModelConfig::fixed_bitmap`]), and an
//! absent one answers EIO like any missing register. AnyThread bits are accepted in versions 3
//! and 4 only; a model has one thread per core, so they change nothing. Time is the TSC, advanced by
//! [`ModelHandle::advance_tsc`]; the model's TSC runs at [`MODEL_TSC_HZ`].
//!
//! The model also keeps a few non-PMU registers (IA32_PERF_CTL, IA32_MISC_ENABLE, AMD HWCR) so
//! tests can show that the allow-list, not the CPU, is what refuses them; and it logs every
//! access it receives ([`ModelHandle::accesses`], [`ModelHandle::writes`]).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use counterhal_hal::{DeviceKind, Error, Result};

use crate::cpuid::{CpuidDump, CpuidResult};
use crate::device::{Access, MsrDevice, ThreadPin, refused};
use counterhal_x86::width_mask;

use crate::regs::{self, evtsel, fixed_ctrl};

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
}

impl ModelConfig {
    fn global_control(&self) -> bool {
        self.version >= 2
    }

    fn gp_mask(&self) -> u64 {
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

    fn global_mask(&self) -> u64 {
        self.gp_mask() | (u64::from(self.fixed_set()) << 32)
    }

    /// The bits of IA32_FIXED_CTR_CTRL this CPU implements: OS, USR and PMI for each fixed
    /// counter, and AnyThread in versions 3 and 4 only.
    fn fixed_ctrl_valid(&self) -> u64 {
        let mut field = fixed_ctrl::OS | fixed_ctrl::USR | fixed_ctrl::PMI;
        if (3..=4).contains(&self.version) {
            field |= fixed_ctrl::ANY;
        }
        let set = self.fixed_set();
        (0..32)
            .filter(|j| set & (1 << j) != 0 && *j < 16)
            .fold(0, |mask, j| mask | (field << (4 * j)))
    }

    /// The CPUID answers of the modelled CPU (leaves 0, 1, 0xA and 0x15 for Intel; 0, 1 and
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
            dump.insert(0, 0, CpuidResult::new(0x15, word(0), word(8), word(4)));
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
}

/// One access the model received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsrAccess {
    /// The CPU.
    pub cpu: u32,
    /// The MSR address.
    pub msr: u32,
    /// Read or write.
    pub access: Access,
    /// The value written, or read (0 when refused).
    pub value: u64,
    /// Whether the modelled CPU accepted it (else it answered EIO).
    pub accepted: bool,
}

/// One accepted write, for asserting write sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsrWrite {
    /// The CPU.
    pub cpu: u32,
    /// The MSR address.
    pub msr: u32,
    /// The value.
    pub value: u64,
}

#[derive(Clone, Debug, Default)]
struct CpuState {
    evtsel: Vec<u64>,
    counter: Vec<u64>,
    fixed: Vec<u64>,
    fixed_ctrl: u64,
    global_ctrl: u64,
    global_status: u64,
    tsc: u64,
    scratch: Vec<(u32, u64)>,
}

#[derive(Debug)]
struct ModelState {
    config: ModelConfig,
    cpus: Vec<CpuState>,
    log: VecDeque<MsrAccess>,
}

/// How many accesses the model's log keeps (the most recent), so a long-running test does not
/// grow without bound.
pub const MODEL_LOG: usize = 4096;

impl ModelState {
    fn record(&mut self, access: MsrAccess) {
        if self.log.len() == MODEL_LOG {
            self.log.pop_front();
        }
        self.log.push_back(access);
    }
}

/// Where a modelled register lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reg {
    Tsc,
    EvtSel(usize),
    Counter(usize),
    FullWidthCounter(usize),
    Fixed(usize),
    FixedCtrl,
    GlobalStatus,
    GlobalCtrl,
    GlobalOvfCtrl,
    PerfCapabilities,
    Scratch,
}

impl ModelState {
    fn locate(&self, msr: u32) -> Option<Reg> {
        let c = &self.config;
        let gp = c.gp_counters;
        let index = |base: u32, count: u32, stride: u32| -> Option<usize> {
            let offset = msr.checked_sub(base)?;
            (offset % stride == 0 && offset / stride < count).then_some((offset / stride) as usize)
        };
        if msr == regs::TSC {
            return Some(Reg::Tsc);
        }
        if c.amd {
            if msr == regs::AMD_HWCR {
                return Some(Reg::Scratch);
            }
            let legacy = gp.min(4);
            if let Some(i) = index(regs::AMD_PERF_EVT_SEL0, legacy, 1) {
                return Some(Reg::EvtSel(i));
            }
            if let Some(i) = index(regs::AMD_PERF_CTR0, legacy, 1) {
                return Some(Reg::Counter(i));
            }
            if c.core_ext {
                if let Some(i) = index(regs::AMD_PERF_CTL_EXT0, gp, 2) {
                    return Some(Reg::EvtSel(i));
                }
                if let Some(i) = index(regs::AMD_PERF_CTR_EXT0, gp, 2) {
                    return Some(Reg::Counter(i));
                }
            }
            if c.global_control() {
                match msr {
                    regs::AMD_GLOBAL_STATUS => return Some(Reg::GlobalStatus),
                    regs::AMD_GLOBAL_CTL => return Some(Reg::GlobalCtrl),
                    regs::AMD_GLOBAL_STATUS_CLR => return Some(Reg::GlobalOvfCtrl),
                    _ => {}
                }
            }
            return None;
        }
        if msr == regs::IA32_PERF_CTL || msr == regs::IA32_MISC_ENABLE {
            return Some(Reg::Scratch);
        }
        if msr == regs::IA32_PERF_CAPABILITIES && c.version >= 2 {
            return Some(Reg::PerfCapabilities);
        }
        if let Some(i) = index(regs::IA32_PMC0, gp, 1) {
            return Some(Reg::Counter(i));
        }
        if let Some(i) = index(regs::IA32_PERFEVTSEL0, gp, 1) {
            return Some(Reg::EvtSel(i));
        }
        if c.full_width_writes {
            if let Some(i) = index(regs::IA32_A_PMC0, gp, 1) {
                return Some(Reg::FullWidthCounter(i));
            }
        }
        if c.global_control() {
            if let Some(i) = index(regs::IA32_FIXED_CTR0, 32, 1)
                && c.fixed_set() & (1 << i) != 0
            {
                return Some(Reg::Fixed(i));
            }
            match msr {
                regs::IA32_FIXED_CTR_CTRL if c.fixed_set() != 0 => return Some(Reg::FixedCtrl),
                regs::IA32_PERF_GLOBAL_STATUS => return Some(Reg::GlobalStatus),
                regs::IA32_PERF_GLOBAL_CTRL => return Some(Reg::GlobalCtrl),
                regs::IA32_PERF_GLOBAL_OVF_CTRL => return Some(Reg::GlobalOvfCtrl),
                _ => {}
            }
        }
        None
    }

    /// The event select bits the modelled CPU accepts (others #GP).
    fn evtsel_valid(&self) -> u64 {
        let low = width_mask(32);
        if self.config.amd {
            (low & !evtsel::ANY)
                | evtsel::AMD_EVENT_HIGH
                | evtsel::AMD_GUEST_ONLY
                | evtsel::AMD_HOST_ONLY
        } else if (3..=4).contains(&self.config.version) {
            low
        } else {
            low & !evtsel::ANY
        }
    }

    fn read(&self, cpu: usize, reg: Reg, msr: u32) -> Option<u64> {
        let c = &self.config;
        let s = &self.cpus[cpu];
        Some(match reg {
            Reg::Tsc => s.tsc,
            Reg::EvtSel(i) => s.evtsel[i],
            Reg::Counter(i) | Reg::FullWidthCounter(i) => s.counter[i],
            Reg::Fixed(i) => s.fixed[i],
            Reg::FixedCtrl => s.fixed_ctrl,
            Reg::GlobalStatus => s.global_status,
            Reg::GlobalCtrl => s.global_ctrl,
            Reg::GlobalOvfCtrl => return None,
            Reg::PerfCapabilities => {
                if c.full_width_writes {
                    regs::PERF_CAP_FW_WRITE
                } else {
                    0
                }
            }
            Reg::Scratch => s
                .scratch
                .iter()
                .find(|(m, _)| *m == msr)
                .map_or(0, |(_, v)| *v),
        })
    }

    /// Applies a write; `false` when the modelled CPU would raise #GP.
    fn write(&mut self, cpu: usize, reg: Reg, msr: u32, value: u64) -> bool {
        let gp_width = self.config.gp_width;
        let fixed_width = self.config.fixed_width;
        let fixed_ctrl_valid = self.config.fixed_ctrl_valid();
        let global_mask = self.config.global_mask();
        let amd = self.config.amd;
        let valid = self.evtsel_valid();
        let s = &mut self.cpus[cpu];
        match reg {
            Reg::Tsc => s.tsc = value,
            Reg::EvtSel(i) => {
                if value & !valid != 0 {
                    return false;
                }
                s.evtsel[i] = value;
            }
            Reg::Counter(i) if !amd => {
                // IA32_PMCx: bits 31:0 are loaded and sign-extended to the width.
                let low = value & width_mask(32);
                let extended = if low & (1 << 31) != 0 {
                    low | !width_mask(32)
                } else {
                    low
                };
                s.counter[i] = extended & width_mask(gp_width);
            }
            Reg::Counter(i) | Reg::FullWidthCounter(i) => {
                if value & !width_mask(gp_width) != 0 {
                    return false;
                }
                s.counter[i] = value;
            }
            Reg::Fixed(i) => {
                if value & !width_mask(fixed_width) != 0 {
                    return false;
                }
                s.fixed[i] = value;
            }
            Reg::FixedCtrl => {
                if value & !fixed_ctrl_valid != 0 {
                    return false;
                }
                s.fixed_ctrl = value;
            }
            Reg::GlobalStatus | Reg::PerfCapabilities => return false,
            Reg::GlobalCtrl => {
                if value & !global_mask != 0 {
                    return false;
                }
                s.global_ctrl = value;
            }
            Reg::GlobalOvfCtrl => {
                let clearable = global_mask | if amd { 0 } else { 0b11 << 62 };
                if value & !clearable != 0 {
                    return false;
                }
                s.global_status &= !value;
            }
            Reg::Scratch => {
                s.scratch.retain(|(m, _)| *m != msr);
                s.scratch.push((msr, value));
            }
        }
        true
    }

    fn count(&mut self, cpu: usize, code: u16, umask: u8, user: u64, kernel: u64) {
        let c = self.config.clone();
        let s = &mut self.cpus[cpu];
        for i in 0..c.gp_counters as usize {
            let sel = s.evtsel[i];
            let gated = c.global_control() && s.global_ctrl & (1 << i) == 0;
            if sel & evtsel::EN == 0 || gated {
                continue;
            }
            if evtsel::event_code(sel, c.amd) != code || evtsel::umask(sel) != umask {
                continue;
            }
            // The model runs host code only: GuestOnly without HostOnly counts nothing.
            if c.amd && sel & evtsel::AMD_GUEST_ONLY != 0 && sel & evtsel::AMD_HOST_ONLY == 0 {
                continue;
            }
            let mut events = 0u128;
            if sel & evtsel::USR != 0 {
                events += u128::from(user);
            }
            if sel & evtsel::OS != 0 {
                events += u128::from(kernel);
            }
            let overflowed = add_wrapping(&mut s.counter[i], events, c.gp_width);
            if overflowed && c.global_control() {
                s.global_status |= 1 << i;
            }
        }
        for j in 0..s.fixed.len() {
            if c.fixed_set() & (1 << j) == 0 {
                continue;
            }
            let field = (s.fixed_ctrl >> (4 * j)) & 0xF;
            if field & (fixed_ctrl::OS | fixed_ctrl::USR) == 0
                || s.global_ctrl & (1 << (32 + j)) == 0
            {
                continue;
            }
            let event = match j {
                0 => (0xC0, 0x00),
                1 => (0x3C, 0x00),
                2 => (0x3C, 0x01),
                _ => continue,
            };
            if event != (code, umask) {
                continue;
            }
            let mut events = 0u128;
            if field & fixed_ctrl::USR != 0 {
                events += u128::from(user);
            }
            if field & fixed_ctrl::OS != 0 {
                events += u128::from(kernel);
            }
            if add_wrapping(&mut s.fixed[j], events, c.fixed_width) {
                s.global_status |= 1 << (32 + j);
            }
        }
    }
}

/// Adds `events` to a `width`-bit counter; returns whether it wrapped.
fn add_wrapping(counter: &mut u64, events: u128, width: u32) -> bool {
    let sum = u128::from(*counter) + events;
    *counter = (sum & u128::from(width_mask(width))) as u64;
    sum >> width != 0
}

/// A modelled PMU as an [`MsrDevice`]. Built by [`ModelDevice::new`] together with its
/// [`ModelHandle`], or by [`crate::MsrBackend::with_model`].
#[derive(Clone, Debug)]
pub struct ModelDevice {
    state: Arc<Mutex<ModelState>>,
}

/// The test's side of a model: feeds it work, advances its clock, and inspects what the
/// backend did to it. Cloneable; every clone and the device share one state.
#[derive(Clone, Debug)]
pub struct ModelHandle {
    state: Arc<Mutex<ModelState>>,
}

impl ModelDevice {
    /// A model in its reset state, and the handle that drives it.
    pub fn new(config: ModelConfig) -> (ModelDevice, ModelHandle) {
        let cpu = CpuState {
            evtsel: vec![0; config.gp_counters as usize],
            counter: vec![0; config.gp_counters as usize],
            fixed: vec![0; (32 - config.fixed_set().leading_zeros()) as usize],
            // Reset state: every global enable set, so EN bits alone start counters (SDM:
            // compatible with software that predates the global control).
            global_ctrl: if config.global_control() {
                config.global_mask()
            } else {
                0
            },
            ..CpuState::default()
        };
        let cpus = vec![cpu; config.cpus.max(1) as usize];
        let state = Arc::new(Mutex::new(ModelState {
            config,
            cpus,
            log: VecDeque::new(),
        }));
        (
            ModelDevice {
                state: Arc::clone(&state),
            },
            ModelHandle { state },
        )
    }

    fn lock(&self) -> MutexGuard<'_, ModelState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl MsrDevice for ModelDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Model
    }

    fn describe(&self) -> String {
        format!("model {}", self.lock().config.name)
    }

    fn cpu_count(&self) -> u32 {
        self.lock().cpus.len() as u32
    }

    fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        let mut state = self.lock();
        check_cpu(&state, cpu)?;
        let value = state
            .locate(msr)
            .and_then(|reg| state.read(cpu as usize, reg, msr));
        state.record(MsrAccess {
            cpu,
            msr,
            access: Access::Read,
            value: value.unwrap_or(0),
            accepted: value.is_some(),
        });
        value.ok_or_else(|| refused(cpu, msr, Access::Read))
    }

    fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        let mut state = self.lock();
        check_cpu(&state, cpu)?;
        let accepted = match state.locate(msr) {
            Some(reg) => state.write(cpu as usize, reg, msr, value),
            None => false,
        };
        state.record(MsrAccess {
            cpu,
            msr,
            access: Access::Write,
            value,
            accepted,
        });
        if accepted {
            Ok(())
        } else {
            Err(refused(cpu, msr, Access::Write))
        }
    }

    fn tsc_hz(&self) -> Option<u64> {
        Some(MODEL_TSC_HZ)
    }

    /// A model does not touch the OS: a "this thread" group counts on model CPU 0.
    fn pin_this_thread(&self) -> Result<ThreadPin> {
        Ok(ThreadPin::unpinned(0))
    }
}

fn check_cpu(state: &ModelState, cpu: u32) -> Result<()> {
    if cpu as usize >= state.cpus.len() {
        return Err(Error::new(
            counterhal_hal::ErrorKind::NotFound,
            format!(
                "CPU {cpu} does not exist (the model has CPUs 0-{})",
                state.cpus.len() - 1
            ),
        )
        .with_errno(6));
    }
    Ok(())
}

impl ModelHandle {
    fn lock(&self) -> MutexGuard<'_, ModelState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The model's configuration.
    pub fn config(&self) -> ModelConfig {
        self.lock().config.clone()
    }

    /// Whether the model is of an AMD CPU.
    pub fn is_amd(&self) -> bool {
        self.lock().config.amd
    }

    /// Runs `user` events in user mode and `kernel` in kernel mode of event `event_code`
    /// (AMD: 12 bits) with unit mask `umask` on CPU 0: every enabled counter programmed for
    /// exactly that event counts those of its privilege levels.
    pub fn feed(&self, event_code: u16, umask: u8, user: u64, kernel: u64) {
        self.lock().count(0, event_code, umask, user, kernel);
    }

    /// As [`feed`](Self::feed), on `cpu`.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::NotFound`] for a CPU the model does not have.
    pub fn feed_on(
        &self,
        cpu: u32,
        event_code: u16,
        umask: u8,
        user: u64,
        kernel: u64,
    ) -> Result<()> {
        let mut state = self.lock();
        check_cpu(&state, cpu)?;
        state.count(cpu as usize, event_code, umask, user, kernel);
        Ok(())
    }

    /// The event code and unit mask of "instructions retired" on this model (0xC0/0x00 on
    /// both vendors).
    pub fn instructions_event(&self) -> (u16, u8) {
        (0xC0, 0x00)
    }

    /// The event code and unit mask of "core cycles" on this model (Intel 0x3C/0x00, AMD
    /// 0x76/0x00).
    pub fn cycles_event(&self) -> (u16, u8) {
        if self.is_amd() {
            (0x76, 0x00)
        } else {
            (0x3C, 0x00)
        }
    }

    /// Retires instructions on CPU 0 (GP counters programmed for them and fixed counter 0).
    pub fn feed_instructions(&self, user: u64, kernel: u64) {
        let (code, umask) = self.instructions_event();
        self.feed(code, umask, user, kernel);
    }

    /// Runs core cycles on CPU 0 (GP counters programmed for them and fixed counter 1). On a
    /// model of a P6-lineage Intel CPU (family 6, model 0x0E or below, as the Core Duo-like
    /// [`PmuModelKind::IntelV1`]) counters programmed with the older CPU_CLK_UNHALTED (0x79)
    /// count them too, as such CPUs do.
    pub fn feed_cycles(&self, user: u64, kernel: u64) {
        let (code, umask) = self.cycles_event();
        self.feed(code, umask, user, kernel);
        let c = self.config();
        if !c.amd && c.family == 6 && c.model <= 0x0E {
            self.feed(0x79, 0x00, user, kernel);
        }
    }

    /// Advances every CPU's TSC by `ticks` (at [`MODEL_TSC_HZ`]).
    pub fn advance_tsc(&self, ticks: u64) {
        for cpu in &mut self.lock().cpus {
            cpu.tsc = cpu.tsc.wrapping_add(ticks);
        }
    }

    /// Advances every CPU's TSC by `nanos` nanoseconds.
    pub fn advance_nanos(&self, nanos: u64) {
        let ticks = u128::from(nanos) * u128::from(MODEL_TSC_HZ) / 1_000_000_000;
        self.advance_tsc(u64::try_from(ticks).unwrap_or(u64::MAX));
    }

    /// The TSC frequency: [`MODEL_TSC_HZ`].
    pub fn tsc_hz(&self) -> u64 {
        MODEL_TSC_HZ
    }

    /// The value of `msr` on `cpu` as the CPU holds it, without logging; `None` for a register
    /// the model does not implement (or a write-only one).
    pub fn peek(&self, cpu: u32, msr: u32) -> Option<u64> {
        let state = self.lock();
        if cpu as usize >= state.cpus.len() {
            return None;
        }
        state
            .locate(msr)
            .and_then(|reg| state.read(cpu as usize, reg, msr))
    }

    /// Writes `msr` on `cpu` behind the backend's back, without logging (for example to occupy
    /// a counter as another user, or an NMI watchdog, would).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::Unsupported`] (EIO) when the modelled CPU refuses the
    /// write; [`counterhal_hal::ErrorKind::NotFound`] for a CPU it does not have.
    pub fn poke(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        let mut state = self.lock();
        check_cpu(&state, cpu)?;
        match state.locate(msr) {
            Some(reg) if state.write(cpu as usize, reg, msr, value) => Ok(()),
            _ => Err(refused(cpu, msr, Access::Write)),
        }
    }

    /// The accesses the device received, in order (the most recent [`MODEL_LOG`]).
    pub fn accesses(&self) -> Vec<MsrAccess> {
        self.lock().log.iter().cloned().collect()
    }

    /// The accepted writes, in order (from the most recent [`MODEL_LOG`] accesses).
    pub fn writes(&self) -> Vec<MsrWrite> {
        self.lock()
            .log
            .iter()
            .filter(|a| a.access == Access::Write && a.accepted)
            .map(|a| MsrWrite {
                cpu: a.cpu,
                msr: a.msr,
                value: a.value,
            })
            .collect()
    }

    /// Forgets the access log.
    pub fn clear_log(&self) {
        self.lock().log.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intel_pmc_writes_sign_extend_bit_31() {
        let (device, handle) = ModelDevice::new(PmuModelKind::IntelV2.config());
        device.write(0, regs::IA32_PMC0, 0xFFFF_FF9C).unwrap();
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some((1 << 40) - 100));
        device.write(0, regs::IA32_PMC0, 0x1_7FFF_FFFF).unwrap();
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(0x7FFF_FFFF));
        // No full-width writes on this model: IA32_A_PMC0 does not exist.
        let error = device.write(0, regs::IA32_A_PMC0, 5).unwrap_err();
        assert_eq!(error.errno(), Some(5));
        assert_eq!(device.read(0, regs::IA32_PERF_CAPABILITIES).unwrap(), 0);
    }

    #[test]
    fn reserved_bits_and_missing_registers_are_eio() {
        let (device, handle) = ModelDevice::new(PmuModelKind::IntelV4.config());
        assert!(device.write(0, regs::IA32_A_PMC0, 1 << 48).is_err());
        assert!(
            device
                .write(0, regs::IA32_PERF_GLOBAL_CTRL, 1 << 4)
                .is_err()
        );
        assert!(device.write(0, regs::IA32_PERF_GLOBAL_STATUS, 0).is_err());
        assert!(device.write(0, regs::IA32_FIXED_CTR_CTRL, 0xF000).is_err());
        assert!(device.write(0, regs::IA32_PERFEVTSEL0, 1 << 34).is_err());
        assert!(device.read(0, regs::IA32_PERFEVTSEL0 + 4).is_err());
        assert!(device.read(0, regs::AMD_PERF_CTR0).is_err());
        assert!(device.read(0, regs::IA32_PERF_GLOBAL_OVF_CTRL).is_err());
        assert!(device.read(2, regs::TSC).is_err());
        assert!(handle.writes().is_empty());
        assert_eq!(handle.accesses().iter().filter(|a| !a.accepted).count(), 8);
        assert_eq!(
            device.read(0, regs::IA32_PERF_CAPABILITIES).unwrap(),
            regs::PERF_CAP_FW_WRITE
        );
    }

    #[test]
    fn counting_is_gated_by_en_global_and_privilege() {
        let (device, handle) = ModelDevice::new(PmuModelKind::IntelV4.config());
        let sel = 0xC0 | evtsel::USR;
        device.write(0, regs::IA32_PERFEVTSEL0, sel).unwrap();
        handle.feed_instructions(10, 5);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(0), "EN clear");
        device
            .write(0, regs::IA32_PERFEVTSEL0, sel | evtsel::EN)
            .unwrap();
        handle.feed_instructions(10, 5);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(10), "user only");
        device.write(0, regs::IA32_PERF_GLOBAL_CTRL, 0).unwrap();
        handle.feed_instructions(10, 5);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(10), "globally frozen");
        device
            .write(0, regs::IA32_PERF_GLOBAL_CTRL, 1 | (1 << 32))
            .unwrap();
        device
            .write(
                0,
                regs::IA32_FIXED_CTR_CTRL,
                fixed_ctrl::OS | fixed_ctrl::USR,
            )
            .unwrap();
        handle.feed_instructions(10, 5);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(20));
        assert_eq!(handle.peek(0, regs::IA32_FIXED_CTR0), Some(15));
        handle.feed(0xC0, 0x01, 100, 100);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(20), "other unit mask");
        assert!(handle.feed_on(7, 0xC0, 0, 1, 1).is_err());
    }

    #[test]
    fn amd_legacy_aliases_and_overflow() {
        let (device, handle) = ModelDevice::new(PmuModelKind::AmdZen.config());
        device
            .write(0, regs::AMD_PERF_CTL_EXT0 + 2, 0x1_0040_00C1 | evtsel::USR)
            .unwrap();
        assert_eq!(
            handle.peek(0, regs::AMD_PERF_EVT_SEL0 + 1),
            Some(0x1_0041_00C1)
        );
        device
            .write(0, regs::AMD_PERF_CTR_EXT0 + 2, (1 << 48) - 2)
            .unwrap();
        handle.feed(0x1C1, 0, 5, 0);
        assert_eq!(handle.peek(0, regs::AMD_PERF_CTR0 + 1), Some(3));
        assert_eq!(handle.peek(0, regs::AMD_GLOBAL_STATUS), Some(0b10));
        device.write(0, regs::AMD_GLOBAL_STATUS_CLR, 0b10).unwrap();
        assert_eq!(handle.peek(0, regs::AMD_GLOBAL_STATUS), Some(0));
        // Legacy-only model: no extended counters, no global registers.
        let (legacy, _) = ModelDevice::new(PmuModelKind::AmdLegacy.config());
        assert!(legacy.read(0, regs::AMD_PERF_CTR_EXT0).is_err());
        assert!(legacy.read(0, regs::AMD_GLOBAL_CTL).is_err());
        assert!(
            legacy
                .write(0, regs::AMD_PERF_EVT_SEL0, evtsel::ANY)
                .is_err()
        );
    }
}
