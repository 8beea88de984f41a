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

mod config;
mod state;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use counterhal_hal::{DeviceKind, Error, Result};

pub use config::{MODEL_TSC_HZ, ModelConfig, PmuModelKind};
use state::ModelState;
pub use state::{MODEL_LOG, MsrAccess, MsrWrite};

use crate::cpuid::CpuidSource;
use crate::device::{Access, MsrDevice, ThreadPin, refused};
use crate::timer::{ModelTimers, Tick, Timer};

/// A modelled PMU as an [`MsrDevice`]. Built by [`ModelDevice::new`] together with its
/// [`ModelHandle`], or by [`crate::MsrBackend::with_model`].
#[derive(Clone, Debug)]
pub struct ModelDevice {
    state: Arc<Mutex<ModelState>>,
    timers: ModelTimers,
}

/// The test's side of a model: feeds it work, advances its clock, and inspects what the
/// backend did to it. Cloneable; every clone and the device share one state.
#[derive(Clone, Debug)]
pub struct ModelHandle {
    state: Arc<Mutex<ModelState>>,
    timers: ModelTimers,
}

impl ModelDevice {
    /// A model in its reset state, and the handle that drives it.
    pub fn new(config: ModelConfig) -> (ModelDevice, ModelHandle) {
        let state = Arc::new(Mutex::new(ModelState::new(config)));
        let timers = ModelTimers::default();
        (
            ModelDevice {
                state: Arc::clone(&state),
                timers: timers.clone(),
            },
            ModelHandle { state, timers },
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

    fn cpuid_of(&self, cpu: u32) -> Result<Box<dyn CpuidSource>> {
        let state = self.lock();
        check_cpu(&state, cpu)?;
        Ok(Box::new(state.config.cpuid_of(cpu)))
    }

    fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        let mut state = self.lock();
        check_cpu(&state, cpu)?;
        let value = state
            .locate_on(cpu, msr)
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
        let accepted = match state.locate_on(cpu, msr) {
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

    /// A timer on the model's clock: `tick` runs inside [`ModelHandle::advance_tsc`] each time
    /// the TSC reaches the next multiple of `period` after now, with the TSC at that moment.
    fn start_timer(&self, period: Duration, tick: Tick) -> Result<Timer> {
        let now = self.lock().cpus.first().map_or(0, |cpu| cpu.tsc);
        Ok(self.timers.start(now, MODEL_TSC_HZ, period, tick))
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

    /// Advances every CPU's TSC by `ticks` (at [`MODEL_TSC_HZ`]), running the timers that
    /// fall due on the way (a multiplexed group's rotation), each at its due time, in order.
    pub fn advance_tsc(&self, ticks: u64) {
        let now = self.lock().cpus.first().map_or(0, |cpu| cpu.tsc);
        // No lock of the model is held while a tick runs: it reads and writes registers.
        self.timers.run_until(now.saturating_add(ticks), |to| {
            let now = self.lock().cpus.first().map_or(0, |cpu| cpu.tsc);
            self.step_tsc(to.saturating_sub(now));
        });
    }

    fn step_tsc(&self, ticks: u64) {
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
    use crate::regs::{self, fixed_ctrl};
    use counterhal_hal::Evtsel;

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
        let sel = 0xC0 | Evtsel::USR;
        device.write(0, regs::IA32_PERFEVTSEL0, sel).unwrap();
        handle.feed_instructions(10, 5);
        assert_eq!(handle.peek(0, regs::IA32_PMC0), Some(0), "EN clear");
        device
            .write(0, regs::IA32_PERFEVTSEL0, sel | Evtsel::EN)
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
            .write(0, regs::AMD_PERF_CTL_EXT0 + 2, 0x1_0040_00C1 | Evtsel::USR)
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
                .write(0, regs::AMD_PERF_EVT_SEL0, Evtsel::ANY)
                .is_err()
        );
    }
}
