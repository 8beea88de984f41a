//! [`MsrGroup`]: events counting together on one CPU's PMU registers.

use counterhal_hal::Evtsel;
use std::fmt;
use std::sync::Arc;

use counterhal_hal::{CountsThrough, Error, Result};
use counterhal_x86::{
    CounterRef, Multiplexed, Multiplexer, Rotation, Schedule, Stopped, counter_delta, width_mask,
};

use crate::device::ThreadPin;
use crate::pmu::PmuInfo;
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
}

/// The registers' side of a group's multiplexer ([`Multiplexed`]): its selects, counters and
/// control bits on one CPU, with the TSC as the clock. Every operation holds the claims'
/// lock, which serialises the read-modify-write of registers groups share.
pub struct Registers {
    shared: Arc<Shared>,
    /// The PMU of the group's CPU (on a hybrid chip, of its core).
    pmu: Arc<PmuInfo>,
    cpu: u32,
    slots: Vec<Slot>,
    ours: u64,
    /// Our fields of IA32_FIXED_CTR_CTRL while enabled, and the mask of all our fields.
    fixed_fields: u64,
    fixed_mask: u64,
    claimed: CpuClaims,
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
/// `time_enabled` is TSC time while enabled. A group that fits its counters runs whole:
/// `time_running == time_enabled`. An ungrouped set with more events than counters
/// ([`OpenOptions::ungrouped`](counterhal_hal::OpenOptions::ungrouped)) is split into turns
/// that take the counters in rotation, switched by a timer (see the crate's README and
/// [`counterhal_x86::multiplex`], the multiplexer every software-multiplexing backend shares):
/// an event's value grows and its time running runs only during its turn, events on fixed
/// counters count always. Dropping the group stops its timer and its counters, clears their
/// selects and releases them, and restores the affinity of a pinned thread.
pub struct MsrGroup {
    multiplexer: Multiplexer<Registers>,
    cpu: u32,
    _pin: Option<ThreadPin>,
}

impl fmt::Debug for MsrGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrGroup")
            .field("cpu", &self.cpu)
            .field("counters", &self.counters())
            .field("turns", &self.turns())
            .finish()
    }
}

impl MsrGroup {
    /// A group of `registers` scheduled as `schedule` says, programmed for its first turn,
    /// with its rotation timer started every `slice` when its events take turns.
    ///
    /// # Errors
    /// Device errors while programming; [`Timer::thread`](counterhal_x86::Timer::thread)'s.
    pub(crate) fn start(
        registers: Registers,
        schedule: &Schedule,
        pin: Option<ThreadPin>,
        slice: std::time::Duration,
    ) -> Result<MsrGroup> {
        let cpu = registers.cpu;
        let device = Arc::clone(&registers.shared.device);
        // On failure the multiplexer releases the registers, and then the pin goes.
        let multiplexer =
            Multiplexer::open(registers, schedule, |tick| device.start_timer(slice, tick))?;
        Ok(MsrGroup {
            multiplexer,
            cpu,
            _pin: pin,
        })
    }

    /// The logical CPU this group counts on.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Whether the calling thread was pinned for this group (a [`BackendTarget::ThisThread`](counterhal_hal::BackendTarget::ThisThread) group on
    /// the real device).
    pub fn pinned_thread(&self) -> bool {
        self._pin.as_ref().is_some_and(ThreadPin::is_pinned)
    }

    /// The counter each event was placed on, in request order (events of different turns may
    /// share one).
    pub fn counters(&self) -> Vec<(String, CounterRef)> {
        self.multiplexer.with(|registers, _, _| {
            registers
                .slots
                .iter()
                .map(|s| (s.name.clone(), s.counter))
                .collect()
        })
    }

    /// How many turns the events take (1: they all count all the time).
    pub fn turns(&self) -> usize {
        self.multiplexer.turns()
    }

    /// How many times the rotation has switched turns.
    pub fn switches(&self) -> u64 {
        self.multiplexer.switches()
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
    /// counter's width; [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) for a value the CPU cannot load or an
    /// event whose turn is not on; device errors.
    pub fn set_counter(&mut self, index: usize, value: u64) -> Result<()> {
        self.multiplexer
            .with(|registers, turns, values| registers.set_counter(turns, values, index, value))
    }
}

impl Registers {
    /// The registers of a group of `slots` on `cpu`: `ours` are their global-control bits,
    /// `claimed` the counters they hold.
    pub(crate) fn new(
        shared: Arc<Shared>,
        pmu: Arc<PmuInfo>,
        cpu: u32,
        slots: Vec<Slot>,
        ours: u64,
        claimed: CpuClaims,
    ) -> Registers {
        Registers {
            shared,
            pmu,
            cpu,
            slots,
            ours,
            fixed_fields: 0,
            fixed_mask: 0,
            claimed,
        }
    }

    /// The field of IA32_FIXED_CTR_CTRL that counts `evtsel`'s privilege levels.
    fn fixed_field(evtsel: u64) -> u64 {
        let mut field = 0;
        if evtsel & Evtsel::OS != 0 {
            field |= fixed_ctrl::OS;
        }
        if evtsel & Evtsel::USR != 0 {
            field |= fixed_ctrl::USR;
        }
        if evtsel & Evtsel::ANY != 0 {
            field |= fixed_ctrl::ANY;
        }
        field
    }

    /// Zeroes the counters of the events on them now.
    fn zero_counters(&mut self, turns: &Rotation) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        for index in 0..self.slots.len() {
            if !turns.is_active(index) {
                continue;
            }
            let slot = &mut self.slots[index];
            let msr = match slot.counter {
                CounterRef::Gp(i) => self.pmu.counter_full_write_msr(i).unwrap_or(slot.read_msr),
                CounterRef::Fixed(_) => slot.read_msr,
            };
            shared.write(self.cpu, msr, 0)?;
            slot.last_raw = 0;
        }
        Ok(())
    }

    /// Runs `body` with the group's counters frozen (when a global control exists and the
    /// group is `enabled`), unfreezing afterwards whatever `body` returned.
    fn frozen<T>(&mut self, enabled: bool, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let shared = Arc::clone(&self.shared);
        let ctrl = match self.pmu.global_msrs() {
            Some((ctrl, _, _)) if enabled => ctrl,
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

    fn set_counter(
        &mut self,
        turns: &Rotation,
        values: &mut [u64],
        index: usize,
        value: u64,
    ) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = Arc::clone(&self.pmu);
        let Some(slot) = self.slots.get(index) else {
            return Err(Error::invalid_input(format!(
                "event index {index} is past the group's {} events",
                self.slots.len()
            )));
        };
        if !turns.is_active(index) {
            return Err(Error::unsupported(format!(
                "{}: its turn is not on, so it has no counter to load now",
                slot.name
            )));
        }
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
        self.frozen(turns.is_enabled(), |registers| {
            registers.read_into_totals(turns, values)?;
            shared.write(cpu, msr, written)?;
            registers.slots[index].last_raw = value;
            Ok(())
        })
    }

    /// Folds the progress of the counters on now since the last read into `values` (call
    /// frozen).
    fn read_into_totals(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let status = match self.pmu.global_msrs() {
            Some((_, status, _)) => shared.read(self.cpu, status)? & self.ours,
            None => 0,
        };
        for (index, total) in values.iter_mut().enumerate() {
            if !turns.is_active(index) {
                continue;
            }
            let slot = &mut self.slots[index];
            let raw = shared.read(self.cpu, slot.read_msr)? & width_mask(slot.width);
            let overflowed = status & slot.global_bit != 0;
            let delta = counter_delta(slot.last_raw, raw, slot.width, overflowed);
            *total = total.wrapping_add(delta);
            slot.last_raw = raw;
        }
        if let (Some((_, _, clear)), true) = (self.pmu.global_msrs(), status != 0) {
            shared.write(self.cpu, clear, status)?;
        }
        Ok(())
    }

    fn tsc_now(&self) -> Result<u64> {
        self.shared.read(self.cpu, regs::TSC)
    }

    /// The select of event `index` with its EN bit `on`.
    fn select(&self, index: usize, on: bool) -> u64 {
        let evtsel = self.slots[index].evtsel;
        if on {
            evtsel | Evtsel::EN
        } else {
            evtsel & !Evtsel::EN
        }
    }

    /// Switches the group's counters on or off: the selects' EN bits of the events on them
    /// now and the fixed-counter fields, and their global-control bits where the PMU has one.
    /// On, the selects come first and the global control last (one write starts every
    /// counter at once); off, the global control comes first (one write stops them all) and
    /// the selects after.
    fn set_enable_bits(&mut self, turns: &Rotation, on: bool) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = Arc::clone(&self.pmu);
        let global = pmu.global_msrs().map(|(ctrl, _, _)| ctrl);
        if !on && let Some(ctrl) = global {
            let value = shared.read(self.cpu, ctrl)?;
            shared.write(self.cpu, ctrl, value & !self.ours)?;
        }
        for (index, slot) in self.slots.iter().enumerate() {
            if let CounterRef::Gp(i) = slot.counter
                && turns.is_active(index)
            {
                shared.write(self.cpu, pmu.evtsel_msr(i), self.select(index, on))?;
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

    /// The general-purpose counter of event `index` when the event rotates and its turn is
    /// on.
    fn rotates_now(&self, turns: &Rotation, index: usize) -> Option<u32> {
        match self.slots[index].counter {
            CounterRef::Gp(i) if turns.turn_of(index).is_some() && turns.is_active(index) => {
                Some(i)
            }
            _ => None,
        }
    }
}

impl Multiplexed for Registers {
    /// The first turn programmed, not counting: the counters frozen, the selects written
    /// with EN clear, our fixed-counter fields cleared, the counters zeroed and their
    /// overflow status cleared.
    fn open(&mut self, turns: &Rotation) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = Arc::clone(&self.pmu);
        let cpu = self.cpu;
        let _guard = shared.lock_claims();
        let global = pmu.global_msrs();
        // 1. Freeze: clear our enable bits in the global control.
        if let Some((ctrl, _, _)) = global {
            let value = shared.read(cpu, ctrl)?;
            shared.write(cpu, ctrl, value & !self.ours)?;
        }
        // 2. Program the selects of the first turn with EN clear, and clear our fixed-counter
        //    fields: a counter is switched on only while the group is enabled, in its own
        //    select as well as in the global control, so that another agent rewriting the
        //    global control (perf after an NMI-watchdog interrupt does) cannot restart a
        //    disabled group.
        let mut fixed_fields = 0u64;
        let mut fixed_mask = 0u64;
        for (index, slot) in self.slots.iter().enumerate() {
            match slot.counter {
                CounterRef::Gp(i) if turns.is_active(index) => {
                    shared.write(cpu, pmu.evtsel_msr(i), slot.evtsel & !Evtsel::EN)?;
                }
                CounterRef::Gp(_) => {}
                CounterRef::Fixed(f) => {
                    fixed_fields |= Self::fixed_field(slot.evtsel) << (4 * f);
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
        self.zero_counters(turns)?;
        if let Some((_, _, clear)) = global {
            shared.write(cpu, clear, self.ours)?;
        }
        Ok(())
    }

    fn start(&mut self, turns: &Rotation) -> Result<u64> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        let now = self.tsc_now()?;
        self.set_enable_bits(turns, true)?;
        Ok(now)
    }

    /// The enable bits cleared; the counts are folded at the next read.
    fn stop(&mut self, turns: &Rotation, _values: &mut [u64]) -> Result<Stopped> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.set_enable_bits(turns, false)?;
        Ok(Stopped::at(self.tsc_now()?))
    }

    /// Enabled or not (a stop leaves its counts to this fold), with the counters frozen.
    fn fold(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<u64> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(turns.is_enabled(), |registers| {
            registers.read_into_totals(turns, values)
        })?;
        if turns.is_enabled() {
            self.tsc_now()
        } else {
            Ok(0)
        }
    }

    /// With the group frozen, the ending turn's counts are folded into their values and its
    /// selects switched off, then the next turn's counters are zeroed and their selects
    /// written (EN set while enabled; a disabled group's turns move too). Nothing is lost or
    /// counted twice: each counter is read once at the end of its turn and starts the next
    /// from zero.
    fn switch(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = Arc::clone(&self.pmu);
        let _guard = shared.lock_claims();
        let enabled = turns.is_enabled();
        self.frozen(enabled, |registers| {
            registers.read_into_totals(turns, values)?;
            let now = registers.tsc_now()?;
            for index in 0..registers.slots.len() {
                if let Some(i) = registers.rotates_now(turns, index) {
                    let select = registers.select(index, false);
                    shared.write(registers.cpu, pmu.evtsel_msr(i), select)?;
                }
            }
            turns.switch(now);
            for index in 0..registers.slots.len() {
                if let Some(i) = registers.rotates_now(turns, index) {
                    let slot = &registers.slots[index];
                    let load = pmu.counter_full_write_msr(i).unwrap_or(slot.read_msr);
                    shared.write(registers.cpu, load, 0)?;
                    registers.slots[index].last_raw = 0;
                    let select = registers.select(index, enabled);
                    shared.write(registers.cpu, pmu.evtsel_msr(i), select)?;
                }
            }
            Ok(())
        })
    }

    /// With the group frozen, the counters on now zeroed and their overflow status cleared.
    fn reset(&mut self, turns: &Rotation) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(turns.is_enabled(), |registers| {
            registers.zero_counters(turns)?;
            if let Some((_, _, clear)) = registers.pmu.global_msrs() {
                shared.write(registers.cpu, clear, registers.ours)?;
            }
            Ok(())
        })
    }

    /// Our global-control bits and overflow status cleared, every select of the group's
    /// counters (in any turn) zeroed, our fixed-counter fields cleared, and the claims given
    /// back; the last group using an extra MSR clears it. Best effort: a failing device
    /// cannot be helped while dropping.
    fn release(&mut self, _turns: &Rotation) {
        let shared = Arc::clone(&self.shared);
        let pmu = Arc::clone(&self.pmu);
        let mut claims = shared.lock_claims();
        if let Some((ctrl, _, clear)) = pmu.global_msrs() {
            if let Ok(value) = shared.read(self.cpu, ctrl) {
                let _ = shared.write(self.cpu, ctrl, value & !self.ours);
            }
            let _ = shared.write(self.cpu, clear, self.ours);
        }
        let mut fixed_mask = 0;
        let mut general_mask = 0u32;
        for slot in &self.slots {
            match slot.counter {
                CounterRef::Gp(i) => general_mask |= 1 << i,
                CounterRef::Fixed(f) => fixed_mask |= fixed_ctrl::field(f),
            }
        }
        for i in (0..32).filter(|i| general_mask & (1 << i) != 0) {
            let _ = shared.write(self.cpu, pmu.evtsel_msr(i), 0);
        }
        if fixed_mask != 0
            && let Ok(value) = shared.read(self.cpu, regs::IA32_FIXED_CTR_CTRL)
        {
            let _ = shared.write(self.cpu, regs::IA32_FIXED_CTR_CTRL, value & !fixed_mask);
        }
        if let Some(entry) = claims.get_mut(&self.cpu) {
            entry.gp &= !self.claimed.gp;
            entry.fixed &= !self.claimed.fixed;
            for (index, (msr, _, _)) in regs::EXTRA_MSRS.into_iter().enumerate() {
                if self.claimed.extra[index].1 == 0 {
                    continue;
                }
                let held = &mut entry.extra[index];
                held.1 = held.1.saturating_sub(1);
                if held.1 == 0 {
                    *held = (0, 0);
                    let _ = shared.write(self.cpu, msr, 0);
                }
            }
        }
    }

    fn nanos(&self, ticks: u64) -> u64 {
        self.shared.tsc.nanos(ticks)
    }

    fn switch_error(&self, error: Error) -> Error {
        error.context(format_args!(
            "switching the multiplexed turns on CPU {}",
            self.cpu
        ))
    }
}

impl CountsThrough for MsrGroup {
    type Through = Multiplexer<Registers>;
    fn through(&self) -> &Multiplexer<Registers> {
        &self.multiplexer
    }
    fn through_mut(&mut self) -> &mut Multiplexer<Registers> {
        &mut self.multiplexer
    }
}
