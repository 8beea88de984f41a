//! [`MsrGroup`]: events counting together on one CPU's PMU registers.

use counterhal_hal::Evtsel;
use std::fmt;
use std::sync::Arc;

use counterhal_hal::{Error, Group, Reading, Result, check_buffer};
use counterhal_x86::{CounterRef, counter_delta, width_mask};

use crate::device::ThreadPin;
use crate::regs::{self, fixed_ctrl};
use crate::shared::{CpuClaims, Shared};

/// One event of a group on its counter.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub(crate) name: String,
    pub(crate) counter: CounterRef,
    pub(crate) evtsel: u64,
    pub(crate) read_msr: u32,
    pub(crate) width: u32,
    pub(crate) global_bit: u64,
    pub(crate) last_raw: u64,
    pub(crate) total: u64,
}

/// Events counting together on one CPU's PMU registers.
///
/// With a global control register (Intel v2+, AMD PerfMonV2) the group's counters start and
/// stop together with one write of their enable bits, and a read freezes them for the moment
/// of the read so the snapshot is consistent (the events of the read itself are partly not
/// counted). Without one (Intel v1, AMD legacy) each counter starts and stops by its EN bit,
/// one write after another.
///
/// Values are accumulated in 64 bits across counter wraparound (see [`counter_delta`]);
/// `time_enabled` and `time_running` are TSC time while enabled, equal (nothing is
/// multiplexed). Dropping the group stops its counters, clears their selects and releases
/// them, and restores the affinity of a pinned thread.
pub struct MsrGroup {
    shared: Arc<Shared>,
    cpu: u32,
    slots: Vec<Slot>,
    ours: u64,
    /// Our fields of IA32_FIXED_CTR_CTRL while enabled, and the mask of all our fields.
    fixed_fields: u64,
    fixed_mask: u64,
    claimed: CpuClaims,
    enabled: bool,
    enabled_ticks: u64,
    enabled_since: u64,
    _pin: Option<ThreadPin>,
}

impl fmt::Debug for MsrGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrGroup")
            .field("cpu", &self.cpu)
            .field("counters", &self.counters())
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl MsrGroup {
    /// A group of `slots` on `cpu`, not yet programmed: `ours` are their global-control bits,
    /// `claimed` the counters they hold, `pin` the calling thread's pin when there is one.
    pub(crate) fn new(
        shared: Arc<Shared>,
        cpu: u32,
        slots: Vec<Slot>,
        ours: u64,
        claimed: CpuClaims,
        pin: Option<ThreadPin>,
    ) -> MsrGroup {
        MsrGroup {
            shared,
            cpu,
            slots,
            ours,
            fixed_fields: 0,
            fixed_mask: 0,
            claimed,
            enabled: false,
            enabled_ticks: 0,
            enabled_since: 0,
            _pin: pin,
        }
    }

    /// The logical CPU this group counts on.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Whether the calling thread was pinned for this group (a [`Target::ThisThread`](counterhal_hal::Target::ThisThread) group on
    /// the real device).
    pub fn pinned_thread(&self) -> bool {
        self._pin.as_ref().is_some_and(ThreadPin::is_pinned)
    }

    /// The counter each event was placed on, in request order.
    pub fn counters(&self) -> Vec<(String, CounterRef)> {
        self.slots
            .iter()
            .map(|s| (s.name.clone(), s.counter))
            .collect()
    }

    pub(crate) fn program(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let cpu = self.cpu;
        let _guard = shared.lock_claims();
        let global = pmu.global_msrs();
        // 1. Freeze: clear our enable bits in the global control.
        if let Some((ctrl, _, _)) = global {
            let value = shared.read(cpu, ctrl)?;
            shared.write(cpu, ctrl, value & !self.ours)?;
        }
        // 2. Program the selects with EN clear, and clear our fixed-counter fields: a counter
        //    is switched on only while the group is enabled, in its own select as well as in
        //    the global control, so that another agent rewriting the global control (perf
        //    after an NMI-watchdog interrupt does) cannot restart a disabled group.
        let mut fixed_fields = 0u64;
        let mut fixed_mask = 0u64;
        for slot in &self.slots {
            match slot.counter {
                CounterRef::Gp(i) => {
                    shared.write(cpu, pmu.evtsel_msr(i), slot.evtsel & !Evtsel::EN)?;
                }
                CounterRef::Fixed(f) => {
                    let mut field = 0;
                    if slot.evtsel & Evtsel::OS != 0 {
                        field |= fixed_ctrl::OS;
                    }
                    if slot.evtsel & Evtsel::USR != 0 {
                        field |= fixed_ctrl::USR;
                    }
                    if slot.evtsel & Evtsel::ANY != 0 {
                        field |= fixed_ctrl::ANY;
                    }
                    fixed_fields |= field << (4 * f);
                    fixed_mask |= fixed_ctrl::field(f);
                }
            }
        }
        self.fixed_fields = fixed_fields;
        self.fixed_mask = fixed_mask;
        if fixed_mask != 0 {
            let value = shared.read(cpu, regs::IA32_FIXED_CTR_CTRL)?;
            shared.write(cpu, regs::IA32_FIXED_CTR_CTRL, value & !fixed_mask)?;
        }
        // 3. Zero the counters, 4. clear their overflow status.
        self.zero_counters()?;
        if let Some((_, _, clear)) = global {
            shared.write(cpu, clear, self.ours)?;
        }
        Ok(())
    }

    fn zero_counters(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        for slot in &mut self.slots {
            let msr = match slot.counter {
                CounterRef::Gp(i) => shared
                    .pmu
                    .counter_full_write_msr(i)
                    .unwrap_or(slot.read_msr),
                CounterRef::Fixed(_) => slot.read_msr,
            };
            shared.write(self.cpu, msr, 0)?;
            slot.last_raw = 0;
        }
        Ok(())
    }

    /// Runs `body` with the group's counters frozen (when a global control exists and the
    /// group is enabled), unfreezing afterwards whatever `body` returned.
    fn frozen<T>(&mut self, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let shared = Arc::clone(&self.shared);
        let ctrl = match shared.pmu.global_msrs() {
            Some((ctrl, _, _)) if self.enabled => ctrl,
            _ => return body(self),
        };
        let value = shared.read(self.cpu, ctrl)?;
        shared.write(self.cpu, ctrl, value & !self.ours)?;
        let result = body(self);
        let restore = shared.write(self.cpu, ctrl, value | self.ours);
        let value = result?;
        restore?;
        Ok(value)
    }

    /// Loads the hardware counter of event `index` (request order) with `value`, keeping the
    /// accumulated reading: the next events count on from `value`. For testing wraparound on
    /// a real CPU (preload near 2^width).
    ///
    /// On Intel general-purpose counters without full-width writes only values whose bits
    /// 31:0 sign-extend to them can be loaded (below 2^31, or within 2^31 of 2^width).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for an index past the group or a value of more than the
    /// counter's width; [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) for a value the CPU cannot load; device
    /// errors.
    pub fn set_counter(&mut self, index: usize, value: u64) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let Some(slot) = self.slots.get(index) else {
            return Err(Error::invalid_input(format!(
                "event index {index} is past the group's {} events",
                self.slots.len()
            )));
        };
        if value & !width_mask(slot.width) != 0 {
            return Err(Error::invalid_input(format!(
                "{value:#x} does not fit the {}-bit {}",
                slot.width, slot.counter
            )));
        }
        let (msr, written) = match slot.counter {
            CounterRef::Fixed(_) => (slot.read_msr, value),
            CounterRef::Gp(i) => match pmu.counter_full_write_msr(i) {
                Some(msr) => (msr, value),
                None => {
                    let half = 1u64 << 31;
                    if value >= half && value < width_mask(slot.width) - (half - 1) {
                        return Err(Error::unsupported(format!(
                            "{value:#x} cannot be loaded into {}: without full-width writes \
                             (IA32_PERF_CAPABILITIES bit 13) only bits 31:0, sign-extended, are \
                             written",
                            slot.counter
                        )));
                    }
                    (slot.read_msr, value & width_mask(32))
                }
            },
        };
        let cpu = self.cpu;
        let _guard = shared.lock_claims();
        self.frozen(|group| {
            group.read_into_totals()?;
            shared.write(cpu, msr, written)?;
            group.slots[index].last_raw = value;
            Ok(())
        })
    }

    /// Folds the counters' progress since the last read into the totals (call frozen).
    fn read_into_totals(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let status = match shared.pmu.global_msrs() {
            Some((_, status, _)) => shared.read(self.cpu, status)? & self.ours,
            None => 0,
        };
        for slot in &mut self.slots {
            let raw = shared.read(self.cpu, slot.read_msr)? & width_mask(slot.width);
            let overflowed = status & slot.global_bit != 0;
            let delta = counter_delta(slot.last_raw, raw, slot.width, overflowed);
            slot.total = slot.total.wrapping_add(delta);
            slot.last_raw = raw;
        }
        if let (Some((_, _, clear)), true) = (shared.pmu.global_msrs(), status != 0) {
            shared.write(self.cpu, clear, status)?;
        }
        Ok(())
    }

    fn tsc_now(&self) -> Result<u64> {
        self.shared.read(self.cpu, regs::TSC)
    }

    /// Switches the group's counters on or off: their select EN bits and fixed-counter
    /// fields, and their global-control bits where the PMU has one. On, the selects come
    /// first and the global control last (one write starts every counter at once); off, the
    /// global control comes first (one write stops them all) and the selects after.
    fn set_enable_bits(&mut self, on: bool) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let global = pmu.global_msrs().map(|(ctrl, _, _)| ctrl);
        if !on && let Some(ctrl) = global {
            let value = shared.read(self.cpu, ctrl)?;
            shared.write(self.cpu, ctrl, value & !self.ours)?;
        }
        for slot in &self.slots {
            if let CounterRef::Gp(i) = slot.counter {
                let value = if on {
                    slot.evtsel | Evtsel::EN
                } else {
                    slot.evtsel & !Evtsel::EN
                };
                shared.write(self.cpu, pmu.evtsel_msr(i), value)?;
            }
        }
        if self.fixed_mask != 0 {
            let value = shared.read(self.cpu, regs::IA32_FIXED_CTR_CTRL)? & !self.fixed_mask;
            let value = if on { value | self.fixed_fields } else { value };
            shared.write(self.cpu, regs::IA32_FIXED_CTR_CTRL, value)?;
        }
        if on && let Some(ctrl) = global {
            let value = shared.read(self.cpu, ctrl)?;
            shared.write(self.cpu, ctrl, value | self.ours)?;
        }
        Ok(())
    }
}

impl Group for MsrGroup {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn enable(&mut self) -> Result<()> {
        if self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        let now = self.tsc_now()?;
        self.set_enable_bits(true)?;
        self.enabled_since = now;
        self.enabled = true;
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.set_enable_bits(false)?;
        let now = self.tsc_now()?;
        self.enabled_ticks = self
            .enabled_ticks
            .wrapping_add(now.wrapping_sub(self.enabled_since));
        self.enabled = false;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(|group| {
            group.zero_counters()?;
            if let Some((_, _, clear)) = shared.pmu.global_msrs() {
                shared.write(group.cpu, clear, group.ours)?;
            }
            for slot in &mut group.slots {
                slot.total = 0;
            }
            Ok(())
        })
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.slots.len(), readings.len())?;
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(|group| group.read_into_totals())?;
        let mut ticks = self.enabled_ticks;
        if self.enabled {
            ticks = ticks.wrapping_add(self.tsc_now()?.wrapping_sub(self.enabled_since));
        }
        let nanos = shared.tsc.nanos(ticks);
        for (reading, slot) in readings.iter_mut().zip(&self.slots) {
            *reading = Reading::new(slot.total, nanos, nanos);
        }
        Ok(())
    }
}

impl Drop for MsrGroup {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let mut claims = shared.lock_claims();
        // Best effort: a failing device cannot be helped while dropping.
        if let Some((ctrl, _, clear)) = pmu.global_msrs() {
            if let Ok(value) = shared.read(self.cpu, ctrl) {
                let _ = shared.write(self.cpu, ctrl, value & !self.ours);
            }
            let _ = shared.write(self.cpu, clear, self.ours);
        }
        let mut fixed_mask = 0;
        for slot in &self.slots {
            match slot.counter {
                CounterRef::Gp(i) => {
                    let _ = shared.write(self.cpu, pmu.evtsel_msr(i), 0);
                }
                CounterRef::Fixed(f) => fixed_mask |= fixed_ctrl::field(f),
            }
        }
        if fixed_mask != 0
            && let Ok(value) = shared.read(self.cpu, regs::IA32_FIXED_CTR_CTRL)
        {
            let _ = shared.write(self.cpu, regs::IA32_FIXED_CTR_CTRL, value & !fixed_mask);
        }
        if let Some(entry) = claims.get_mut(&self.cpu) {
            entry.gp &= !self.claimed.gp;
            entry.fixed &= !self.claimed.fixed;
        }
    }
}
