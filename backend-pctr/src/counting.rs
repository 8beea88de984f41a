//! The counting state of a [`PctrGroup`](crate::PctrGroup): which functions each turn
//! programs, the values accumulated from `PCIOCRD` snapshots across wraparound, and the clock
//! of the turns. The group and its rotation timer share it behind one lock.

use std::sync::{Arc, Mutex};

use counterhal_hal::{Error, ErrorKind, Reading, Result, check_buffer};
use counterhal_x86::{
    CounterRef, Rotation, Schedule, TscFrequency, counter_delta, is_backward_step, width_mask,
};

use crate::abi::Abi;
use crate::cpu::{CpuKind, function};
use crate::device::{Snapshot, read_snapshot, set_function};
use crate::errno::{Operation, map_errno};
use crate::shared::{Shared, lock};

/// The most events one counter can count in one TSC cycle, for telling a long forward step
/// from a step backwards (see [`PctrGroup::backward_steps`](crate::PctrGroup::backward_steps)).
/// Retirement-width events count at most 4 to 6 per cycle on the CPUs pctr drives; 8 leaves a
/// margin.
pub const MAX_EVENTS_PER_CYCLE: u64 = 8;

/// What a group needs to know of the hardware behind the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hardware {
    /// The ABI the driver speaks.
    pub(crate) abi: Abi,
    /// The CPU kind it drives (which bits each counter reads back).
    pub(crate) kind: CpuKind,
    /// The counter width reads carry, in bits.
    pub(crate) width: u32,
    /// The TSC frequency, for times.
    pub(crate) tsc: TscFrequency,
}

/// The counter of a placement: pctr programs no fixed counter, so none is ever placed on one.
pub(crate) fn general(counter: &CounterRef) -> u32 {
    match *counter {
        CounterRef::Gp(i) | CounterRef::Fixed(i) => i,
    }
}

/// A group's counting state.
pub(crate) struct Core {
    shared: Arc<Mutex<Shared>>,
    hardware: Hardware,
    /// (counter, function) of each event, in request order (events of different turns may
    /// share a counter).
    slots: Vec<(u32, u32)>,
    /// Per turn, (counter, function) in programming order, the P6 gate included, counter 0
    /// last (on the P6 its EN starts every counter at once).
    programs: Vec<Vec<(u32, u32)>>,
    rotation: Rotation,
    last_raw: [u64; 4],
    last_tsc: u64,
    values: Vec<u64>,
    backward_steps: u64,
    /// The first error of a switch the timer made, given to the next read.
    timer_error: Option<Error>,
}

impl Core {
    /// The state of events scheduled as `schedule` says, with `words` their functions, over
    /// the device in `shared`. Not yet programmed.
    pub(crate) fn new(
        shared: Arc<Mutex<Shared>>,
        hardware: Hardware,
        schedule: &Schedule,
        words: &[u32],
    ) -> Core {
        let slots: Vec<(u32, u32)> = schedule
            .counters
            .iter()
            .zip(words)
            .map(|(counter, &word)| (general(counter), word))
            .collect();
        let programs = (0..schedule.turn_count)
            .map(|turn| {
                let mut program: Vec<(u32, u32)> = slots
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| schedule.counts_in(i, turn))
                    .map(|(_, &slot)| slot)
                    .collect();
                if let Some(&Some(gate)) = schedule.gates.get(turn) {
                    program.push((gate, function::EN));
                }
                program.sort_by_key(|&(counter, _)| std::cmp::Reverse(counter));
                program
            })
            .collect();
        Core {
            shared,
            hardware,
            values: vec![0; slots.len()],
            slots,
            programs,
            rotation: Rotation::new(schedule),
            last_raw: [0; 4],
            last_tsc: 0,
            backward_steps: 0,
            timer_error: None,
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.rotation.is_enabled()
    }

    pub(crate) fn backward_steps(&self) -> u64 {
        self.backward_steps
    }

    pub(crate) fn rotation(&self) -> &Rotation {
        &self.rotation
    }

    /// The program of the turn on the counters.
    fn program(&self) -> &[(u32, u32)] {
        &self.programs[self.rotation.current()]
    }

    fn read_device(&self, shared: &mut Shared) -> Result<Snapshot> {
        read_snapshot(shared.device.as_mut(), self.hardware.abi)
            .map_err(|e| map_errno(&Operation::Read, e))
    }

    fn set(shared: &mut Shared, counter: u32, word: u32) -> Result<()> {
        set_function(shared.device.as_mut(), counter, word).map_err(|errno| {
            map_errno(
                &Operation::Set {
                    counter,
                    function: word,
                },
                errno,
            )
        })
    }

    /// Whether every counter the turn on programmed still holds its function, comparing only
    /// the bits that counter reads back as set ([`CpuKind::readback_mask`]: not the P6's
    /// reserved EN in PerfEvtSel1, not the CESR bits the P5 driver preserves).
    fn check_functions(&self, snapshot: &Snapshot) -> Result<()> {
        for &(counter, word) in self.program() {
            let now = snapshot.functions[counter as usize];
            let defined = self.hardware.kind.readback_mask(counter);
            if now & defined != word & defined {
                return Err(Error::new(
                    ErrorKind::Busy,
                    format!(
                        "counter {counter} now holds function {now:#x}, not {word:#x}: another \
                         program set it through /dev/pctr, or (on a multi-CPU machine whose \
                         kernel predates the 2024 driver, which programs only the CPU that ran \
                         the PCIOCSn) the read ran on another CPU, whose counter was never \
                         programmed"
                    ),
                )
                .with_hint(
                    "pctr has no exclusive open: stop the other user, then restart the group; \
                     on an older multi-CPU kernel, run on a one-CPU machine or VM",
                ));
            }
        }
        Ok(())
    }

    /// Adds the deltas of the events on the counters since the previous snapshot and moves
    /// the baseline.
    ///
    /// A delta above half the counter's range is ambiguous: a long stretch of counting, or a
    /// read that ran on another CPU whose counter is behind. The TSC settles it: no event
    /// counts more than [`MAX_EVENTS_PER_CYCLE`] per cycle, so a forward step larger than that
    /// many times the cycles elapsed cannot have happened and is taken as a step backwards.
    fn accumulate(&mut self, snapshot: &Snapshot) {
        let width = self.hardware.width;
        let cycles = snapshot.tsc.wrapping_sub(self.last_tsc);
        let possible = cycles.saturating_mul(MAX_EVENTS_PER_CYCLE);
        for (index, &(counter, _)) in self.slots.iter().enumerate() {
            if !self.rotation.is_active(index) {
                continue;
            }
            let raw = snapshot.counters[counter as usize] & width_mask(width);
            let mut delta = counter_delta(self.last_raw[counter as usize], raw, width, false);
            if is_backward_step(delta, width, possible) {
                self.backward_steps += 1;
                delta = 0;
            }
            self.values[index] = self.values[index].saturating_add(delta);
            self.last_raw[counter as usize] = raw;
        }
        self.last_tsc = snapshot.tsc;
    }

    /// Takes `snapshot` as the baseline of the counters of the turn on.
    fn baseline(&mut self, snapshot: &Snapshot) {
        let mask = width_mask(self.hardware.width);
        for &(counter, _) in &self.programs[self.rotation.current()] {
            self.last_raw[counter as usize] = snapshot.counters[counter as usize] & mask;
        }
        self.last_tsc = snapshot.tsc;
    }

    /// Writes 0 to every counter the turn on holds, counter 0 first (on the P6 that stops
    /// every counter at once). Returns the first error after trying them all.
    fn clear(&self, shared: &mut Shared) -> Result<()> {
        let mut first_error = None;
        for &(counter, _) in self.program().iter().rev() {
            if let Err(error) = Self::set(shared, counter, 0) {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub(crate) fn enable(&mut self) -> Result<()> {
        if self.rotation.is_enabled() {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let programmed = self
            .program()
            .iter()
            .try_for_each(|&(counter, word)| Self::set(&mut shared, counter, word))
            .and_then(|()| self.read_device(&mut shared));
        let snapshot = match programmed {
            Ok(snapshot) => snapshot,
            Err(error) => {
                let _ = self.clear(&mut shared);
                return Err(error);
            }
        };
        self.baseline(&snapshot);
        self.rotation.enable(snapshot.tsc);
        Ok(())
    }

    pub(crate) fn disable(&mut self) -> Result<()> {
        if !self.rotation.is_enabled() {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let read = self.read_device(&mut shared).and_then(|snapshot| {
            self.check_functions(&snapshot)?;
            self.accumulate(&snapshot);
            Ok(())
        });
        let cleared = self.clear(&mut shared);
        // The last TSC seen: the read's when it succeeded.
        self.rotation.disable(self.last_tsc);
        read.and(cleared)
    }

    pub(crate) fn reset(&mut self) -> Result<()> {
        self.values.iter_mut().for_each(|value| *value = 0);
        if !self.rotation.is_enabled() {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        // Write 0, then the function: the counter is zeroed whichever driver revision runs
        // (the current one zeroes only when the function changes).
        for &(counter, word) in self.program() {
            for value in [0, word] {
                Self::set(&mut shared, counter, value)?;
            }
        }
        let snapshot = self.read_device(&mut shared)?;
        self.baseline(&snapshot);
        Ok(())
    }

    pub(crate) fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.slots.len(), readings.len())?;
        if let Some(error) = self.timer_error.take() {
            return Err(error.context("switching the multiplexed turns"));
        }
        if self.rotation.is_enabled() {
            let shared = Arc::clone(&self.shared);
            let mut shared = lock(&shared);
            let snapshot = self.read_device(&mut shared)?;
            self.check_functions(&snapshot)?;
            self.accumulate(&snapshot);
        }
        let tsc = self.hardware.tsc;
        for (index, (reading, &value)) in readings.iter_mut().zip(&self.values).enumerate() {
            let (enabled, running) = self.rotation.times(index, self.last_tsc);
            *reading = Reading::new(value, tsc.nanos(enabled), tsc.nanos(running));
        }
        Ok(())
    }

    /// The timer's call: switches turns, keeping the first error for the next read.
    pub(crate) fn tick(&mut self) {
        if let Err(error) = self.switch() {
            self.timer_error.get_or_insert(error);
        }
    }

    /// Ends the turn on the counters and puts the next one on. Enabled: one `PCIOCRD` folds
    /// the ending turn's counts into its events' values (the end of its turn, at that read's
    /// TSC); then `PCIOCSn` with 0 for each counter the next turn leaves unused, and with the
    /// next turn's function for each counter whose function changes (counter 0 last); then a
    /// second `PCIOCRD` is the next turn's baseline, whatever the driver did to the counters
    /// it set. Nothing is counted twice; what counts between the two reads (the sets
    /// themselves) is counted for no event. Disabled: the turn moves, with no ioctl.
    pub(crate) fn switch(&mut self) -> Result<()> {
        if !self.rotation.is_enabled() {
            self.rotation.switch(self.last_tsc);
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let snapshot = self.read_device(&mut shared)?;
        self.check_functions(&snapshot)?;
        self.accumulate(&snapshot);
        let ending = self.rotation.current();
        self.rotation.switch(snapshot.tsc);
        let before = &self.programs[ending];
        let after = &self.programs[self.rotation.current()];
        let held = |counter: u32, program: &[(u32, u32)]| {
            program
                .iter()
                .find(|&&(c, _)| c == counter)
                .map_or(0, |&(_, word)| word)
        };
        // Counter 0 first when stopping (it gates the others on the P6), last when starting.
        for &(counter, _) in before.iter().rev() {
            if !after.iter().any(|&(c, _)| c == counter) {
                Self::set(&mut shared, counter, 0)?;
            }
        }
        for &(counter, word) in after {
            if held(counter, before) != word {
                Self::set(&mut shared, counter, word)?;
            }
        }
        let snapshot = self.read_device(&mut shared)?;
        self.baseline(&snapshot);
        Ok(())
    }

    /// Stops the counters (when enabled) and gives back the counters the group holds,
    /// `owned`.
    pub(crate) fn release(&mut self, owned: u32) {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        if self.rotation.is_enabled() {
            let _ = self.clear(&mut shared);
        }
        shared.in_use &= !owned;
    }
}
