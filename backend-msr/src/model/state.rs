//! The modelled registers of each CPU and what reads and writes do to them.

use counterhal_hal::Evtsel;
use std::collections::VecDeque;

use counterhal_x86::width_mask;

use super::config::ModelConfig;
use crate::device::Access;
use crate::regs::{self, evtsel, fixed_ctrl};

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

/// One CPU's modelled PMU registers.
#[derive(Clone, Debug, Default)]
pub(super) struct CpuState {
    pub(super) evtsel: Vec<u64>,
    pub(super) counter: Vec<u64>,
    pub(super) fixed: Vec<u64>,
    pub(super) fixed_ctrl: u64,
    pub(super) global_ctrl: u64,
    pub(super) global_status: u64,
    pub(super) tsc: u64,
    pub(super) scratch: Vec<(u32, u64)>,
}

/// The whole model: its configuration, every CPU's registers, and the access log.
#[derive(Debug)]
pub(super) struct ModelState {
    pub(super) config: ModelConfig,
    pub(super) cpus: Vec<CpuState>,
    pub(super) log: VecDeque<MsrAccess>,
}

/// How many accesses the model's log keeps (the most recent), so a long-running test does not
/// grow without bound.
pub const MODEL_LOG: usize = 4096;

impl ModelState {
    /// Every CPU in its reset state.
    pub(super) fn new(config: ModelConfig) -> ModelState {
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
        ModelState {
            config,
            cpus,
            log: VecDeque::new(),
        }
    }

    pub(super) fn record(&mut self, access: MsrAccess) {
        if self.log.len() == MODEL_LOG {
            self.log.pop_front();
        }
        self.log.push_back(access);
    }
}

/// Where a modelled register lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reg {
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
    /// An extra MSR of an event (offcore response, load latency, frontend): its bit width.
    Extra(u32),
}

impl ModelState {
    /// [`ModelState::locate`] on CPU `cpu`: a general counter past the CPU's own (a hybrid
    /// model's Atom core) does not exist there.
    pub(super) fn locate_on(&self, cpu: u32, msr: u32) -> Option<Reg> {
        let gp = self.config.gp_counters_of(cpu) as usize;
        self.locate(msr).filter(|reg| match *reg {
            Reg::EvtSel(i) | Reg::Counter(i) | Reg::FullWidthCounter(i) => i < gp,
            _ => true,
        })
    }

    pub(super) fn locate(&self, msr: u32) -> Option<Reg> {
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
        if c.version >= 2
            && let Some(i) = regs::extra_index(msr)
        {
            return Some(Reg::Extra(regs::EXTRA_MSRS[i].2));
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
        if c.full_width_writes
            && let Some(i) = index(regs::IA32_A_PMC0, gp, 1)
        {
            return Some(Reg::FullWidthCounter(i));
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
    pub(super) fn evtsel_valid(&self) -> u64 {
        let low = width_mask(32);
        if self.config.amd {
            (low & !Evtsel::ANY) | Evtsel::EVENT_HIGH | Evtsel::GUEST_ONLY | Evtsel::HOST_ONLY
        } else {
            let any = if (3..=4).contains(&self.config.version) {
                Evtsel::ANY
            } else {
                0
            };
            let umask2 = if self.config.umask2 {
                Evtsel::UMASK2
            } else {
                0
            };
            (low & !Evtsel::ANY) | any | umask2
        }
    }

    pub(super) fn read(&self, cpu: usize, reg: Reg, msr: u32) -> Option<u64> {
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
            Reg::Scratch | Reg::Extra(_) => s
                .scratch
                .iter()
                .find(|(m, _)| *m == msr)
                .map_or(0, |(_, v)| *v),
        })
    }

    /// Applies a write; `false` when the modelled CPU would raise #GP.
    pub(super) fn write(&mut self, cpu: usize, reg: Reg, msr: u32, value: u64) -> bool {
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
            Reg::Extra(bits) if bits < 64 && value >> bits != 0 => return false,
            Reg::Scratch | Reg::Extra(_) => {
                s.scratch.retain(|(m, _)| *m != msr);
                s.scratch.push((msr, value));
            }
        }
        true
    }

    pub(super) fn count(&mut self, cpu: usize, code: u16, umask: u8, user: u64, kernel: u64) {
        let c = self.config.clone();
        let s = &mut self.cpus[cpu];
        for i in 0..c.gp_counters as usize {
            let sel = s.evtsel[i];
            let gated = c.global_control() && s.global_ctrl & (1 << i) == 0;
            if sel & Evtsel::EN == 0 || gated {
                continue;
            }
            if evtsel::event_code(sel, c.amd) != code || evtsel::umask(sel) != umask {
                continue;
            }
            // The model runs host code only: GuestOnly without HostOnly counts nothing.
            if c.amd && sel & Evtsel::GUEST_ONLY != 0 && sel & Evtsel::HOST_ONLY == 0 {
                continue;
            }
            let mut events = 0u128;
            if sel & Evtsel::USR != 0 {
                events += u128::from(user);
            }
            if sel & Evtsel::OS != 0 {
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
pub(super) fn add_wrapping(counter: &mut u64, events: u128, width: u32) -> bool {
    let sum = u128::from(*counter) + events;
    *counter = (sum & u128::from(width_mask(width))) as u64;
    sum >> width != 0
}
