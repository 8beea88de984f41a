//! pctr's side of a [`PctrGroup`](crate::PctrGroup)'s multiplexer ([`Multiplexed`]): which
//! functions each turn programs with `PCIOCSn`, and the counts folded from `PCIOCRD` snapshots
//! across wraparound, with the snapshot's TSC as the clock.

use std::sync::{Arc, Mutex};

use counterhal_hal::{Error, ErrorKind, Result};
use counterhal_x86::{
    CounterRef, Multiplexed, Rotation, Schedule, Stopped, TscFrequency, counter_delta,
    is_backward_step, width_mask,
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

/// The functions of a group's events on the counters, and what the counters last read.
pub struct Functions {
    shared: Arc<Mutex<Shared>>,
    hardware: Hardware,
    /// (counter, function) of each event, in request order (events of different turns may
    /// share a counter).
    slots: Vec<(u32, u32)>,
    /// Per turn, (counter, function) in programming order, the P6 gate included, counter 0
    /// last (on the P6 its EN starts every counter at once).
    programs: Vec<Vec<(u32, u32)>>,
    /// The counters the group holds in any turn, given back at the release.
    owned: u32,
    last_raw: [u64; 4],
    last_tsc: u64,
    backward_steps: u64,
}

impl Functions {
    /// The functions of events scheduled as `schedule` says, with `words` their functions,
    /// over the device in `shared`. Not yet programmed.
    pub(crate) fn new(
        shared: Arc<Mutex<Shared>>,
        hardware: Hardware,
        schedule: &Schedule,
        words: &[u32],
    ) -> Functions {
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
        Functions {
            shared,
            hardware,
            slots,
            programs,
            owned: schedule.general_mask(),
            last_raw: [0; 4],
            last_tsc: 0,
            backward_steps: 0,
        }
    }

    pub(crate) fn owned(&self) -> u32 {
        self.owned
    }

    pub(crate) fn backward_steps(&self) -> u64 {
        self.backward_steps
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

    /// Whether every counter turn `turn` programmed still holds its function, comparing only
    /// the bits that counter reads back as set ([`CpuKind::readback_mask`]: not the P6's
    /// reserved EN in PerfEvtSel1, not the CESR bits the P5 driver preserves).
    fn check_functions(&self, turn: usize, snapshot: &Snapshot) -> Result<()> {
        for &(counter, word) in &self.programs[turn] {
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

    /// Adds the deltas of the events on the counters since the previous snapshot to `values`
    /// and moves the baseline.
    ///
    /// A delta above half the counter's range is ambiguous: a long stretch of counting, or a
    /// read that ran on another CPU whose counter is behind. The TSC settles it: no event
    /// counts more than [`MAX_EVENTS_PER_CYCLE`] per cycle, so a forward step larger than that
    /// many times the cycles elapsed cannot have happened and is taken as a step backwards.
    fn accumulate(&mut self, turns: &Rotation, values: &mut [u64], snapshot: &Snapshot) {
        let width = self.hardware.width;
        let cycles = snapshot.tsc.wrapping_sub(self.last_tsc);
        let possible = cycles.saturating_mul(MAX_EVENTS_PER_CYCLE);
        for (index, &(counter, _)) in self.slots.iter().enumerate() {
            if !turns.is_active(index) {
                continue;
            }
            let raw = snapshot.counters[counter as usize] & width_mask(width);
            let mut delta = counter_delta(self.last_raw[counter as usize], raw, width, false);
            if is_backward_step(delta, width, possible) {
                self.backward_steps += 1;
                delta = 0;
            }
            values[index] = values[index].saturating_add(delta);
            self.last_raw[counter as usize] = raw;
        }
        self.last_tsc = snapshot.tsc;
    }

    /// One `PCIOCRD` whose counts are folded into `values`, once the functions of the turn on
    /// are checked.
    fn read_into(
        &mut self,
        shared: &mut Shared,
        turns: &Rotation,
        values: &mut [u64],
    ) -> Result<Snapshot> {
        let snapshot = self.read_device(shared)?;
        self.check_functions(turns.current(), &snapshot)?;
        self.accumulate(turns, values, &snapshot);
        Ok(snapshot)
    }

    /// Takes `snapshot` as the baseline of the counters of turn `turn`.
    fn baseline(&mut self, turn: usize, snapshot: &Snapshot) {
        let mask = width_mask(self.hardware.width);
        for &(counter, _) in &self.programs[turn] {
            self.last_raw[counter as usize] = snapshot.counters[counter as usize] & mask;
        }
        self.last_tsc = snapshot.tsc;
    }

    /// Writes 0 to every counter turn `turn` holds, counter 0 first (on the P6 that stops
    /// every counter at once). Returns the first error after trying them all.
    fn clear(&self, shared: &mut Shared, turn: usize) -> Result<()> {
        let mut first_error = None;
        for &(counter, _) in self.programs[turn].iter().rev() {
            if let Err(error) = Self::set(shared, counter, 0) {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Multiplexed for Functions {
    /// `PCIOCSn` of each function of the turn on, then a `PCIOCRD` that is the baseline and
    /// whose TSC starts the time enabled; on an error every counter of the turn is cleared.
    fn start(&mut self, turns: &Rotation) -> Result<u64> {
        let turn = turns.current();
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let programmed = self.programs[turn]
            .iter()
            .try_for_each(|&(counter, word)| Self::set(&mut shared, counter, word))
            .and_then(|()| self.read_device(&mut shared));
        let snapshot = match programmed {
            Ok(snapshot) => snapshot,
            Err(error) => {
                let _ = self.clear(&mut shared, turn);
                return Err(error);
            }
        };
        self.baseline(turn, &snapshot);
        Ok(snapshot.tsc)
    }

    /// A last `PCIOCRD` folded, then every counter of the turn cleared, whatever the read
    /// did: the counters stop at the last TSC seen (the read's when it succeeded).
    fn stop(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<Stopped> {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let read = self.read_into(&mut shared, turns, values).map(|_| ());
        let cleared = self.clear(&mut shared, turns.current());
        Ok(Stopped {
            at: self.last_tsc,
            error: read.and(cleared).err(),
        })
    }

    fn fold(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<u64> {
        if turns.is_enabled() {
            let shared = Arc::clone(&self.shared);
            let mut shared = lock(&shared);
            self.read_into(&mut shared, turns, values)?;
        }
        Ok(self.last_tsc)
    }

    /// Enabled: one `PCIOCRD` folds the ending turn's counts into its events' values (the end
    /// of its turn, at that read's TSC); then `PCIOCSn` with 0 for each counter the next turn
    /// leaves unused, and with the next turn's function for each counter whose function
    /// changes (counter 0 last); then a second `PCIOCRD` is the next turn's baseline, whatever
    /// the driver did to the counters it set. Nothing is counted twice; what counts between
    /// the two reads (the sets themselves) is counted for no event. Disabled: the turn moves,
    /// with no ioctl.
    fn switch(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()> {
        if !turns.is_enabled() {
            turns.switch(self.last_tsc);
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let snapshot = self.read_into(&mut shared, turns, values)?;
        let ending = turns.current();
        let next = turns.switch(snapshot.tsc);
        let before = &self.programs[ending];
        let after = &self.programs[next];
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
        self.baseline(next, &snapshot);
        Ok(())
    }

    /// Enabled: 0 and then the function again for each counter of the turn on (the counter is
    /// zeroed whichever driver revision runs: the current one zeroes only when the function
    /// changes), and a `PCIOCRD` as the new baseline.
    fn reset(&mut self, turns: &Rotation) -> Result<()> {
        if !turns.is_enabled() {
            return Ok(());
        }
        let turn = turns.current();
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        for &(counter, word) in &self.programs[turn] {
            for value in [0, word] {
                Self::set(&mut shared, counter, value)?;
            }
        }
        let snapshot = self.read_device(&mut shared)?;
        self.baseline(turn, &snapshot);
        Ok(())
    }

    /// Clears the counters (when enabled) and gives back the counters the group holds.
    fn release(&mut self, turns: &Rotation) {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        if turns.is_enabled() {
            let _ = self.clear(&mut shared, turns.current());
        }
        shared.in_use &= !self.owned;
    }

    fn nanos(&self, ticks: u64) -> u64 {
        self.hardware.tsc.nanos(ticks)
    }
}
