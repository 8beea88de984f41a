//! [`PctrGroup`]: counters programmed through `PCIOCSn` and read with one `PCIOCRD`.

use std::sync::{Arc, Mutex};

use counterhal_hal::{CounterSet, Error, ErrorKind, Group, Reading, Result, check_buffer};
use counterhal_x86::{
    CounterRef, Placement, TscFrequency, counter_delta, is_backward_step, width_mask,
};

use crate::abi::Abi;
use crate::cpu::{CpuKind, function};
use crate::device::{Snapshot, read_snapshot, set_function};
use crate::errno::{Operation, map_errno};
use crate::shared::{Shared, lock};

/// The most events one counter can count in one TSC cycle, for telling a long forward step
/// from a step backwards (see [`PctrGroup::backward_steps`]). Retirement-width events count
/// at most 4 to 6 per cycle on the CPUs pctr drives; 8 leaves a margin.
pub const MAX_EVENTS_PER_CYCLE: u64 = 8;

/// Counters of one [`PctrBackend::open`](crate::PctrBackend): programmed on enable, cleared on disable, read with
/// one `PCIOCRD`, accumulated across wraparound at the counter width.
pub struct PctrGroup {
    shared: Arc<Mutex<Shared>>,
    abi: Abi,
    kind: CpuKind,
    names: Vec<String>,
    /// (counter, function) of each event, in request order.
    slots: Vec<(u32, u32)>,
    /// (counter, function) in programming order, the P6 gate included, counter 0 last.
    program: Vec<(u32, u32)>,
    owned: u32,
    enabled: bool,
    width: u32,
    tsc: TscFrequency,
    last_raw: [u64; 4],
    last_tsc: u64,
    values: Vec<u64>,
    enabled_cycles: u64,
    backward_steps: u64,
}

impl std::fmt::Debug for PctrGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PctrGroup")
            .field("names", &self.names)
            .field("slots", &self.slots)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

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

impl PctrGroup {
    /// A group of events placed as `placement` says, with `words` their function words, over
    /// the device in `shared` driving `hardware`. Not yet programmed: [`Group::enable`]
    /// programs it.
    pub(crate) fn new(
        shared: Arc<Mutex<Shared>>,
        hardware: Hardware,
        names: Vec<String>,
        placement: &Placement,
        words: &[u32],
    ) -> PctrGroup {
        let Hardware {
            abi,
            kind,
            width,
            tsc,
        } = hardware;
        let general = |counter: &CounterRef| match *counter {
            CounterRef::Gp(i) => i,
            // pctr programs no fixed counter, so none is ever placed on one.
            CounterRef::Fixed(i) => i,
        };
        let slots: Vec<(u32, u32)> = placement
            .counters
            .iter()
            .zip(words)
            .map(|(counter, &word)| (general(counter), word))
            .collect();
        let mut program = slots.clone();
        if let Some(gate) = placement.gate {
            program.push((gate, function::EN));
        }
        // Counter 0 last: on the P6 its EN starts every counter at once.
        program.sort_by_key(|&(counter, _)| std::cmp::Reverse(counter));
        let values = vec![0; slots.len()];
        PctrGroup {
            shared,
            abi,
            kind,
            names,
            slots,
            program,
            owned: placement.general_mask(),
            enabled: false,
            width,
            tsc,
            last_raw: [0; 4],
            last_tsc: 0,
            values,
            enabled_cycles: 0,
            backward_steps: 0,
        }
    }

    /// Each event's counter and the function programmed for it, in request order.
    pub fn assignment(&self) -> impl Iterator<Item = (&str, u32, u32)> + '_ {
        self.names
            .iter()
            .zip(&self.slots)
            .map(|(name, &(c, f))| (name.as_str(), c, f))
    }

    /// The counters the group holds, the P6's counter-0 gate included.
    pub fn owned_counters(&self) -> CounterSet {
        CounterSet::from_mask(self.owned)
    }

    /// Whether it is counting.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// How many reads found a counter lower than the previous read by more than half its
    /// range, and further ahead than the elapsed cycles allow. That is taken as a step
    /// backwards (the read ran on another CPU, whose counter is behind) and counted as zero,
    /// not as a wrap of nearly the whole range.
    pub fn backward_steps(&self) -> u64 {
        self.backward_steps
    }

    fn read_device(&self, shared: &mut Shared) -> Result<Snapshot> {
        read_snapshot(shared.device.as_mut(), self.abi).map_err(|e| map_errno(&Operation::Read, e))
    }

    /// Whether every counter the group programmed still holds its function, comparing only
    /// the bits that counter reads back as set ([`CpuKind::readback_mask`]: not the P6's
    /// reserved EN in PerfEvtSel1, not the CESR bits the P5 driver preserves).
    fn check_functions(&self, snapshot: &Snapshot) -> Result<()> {
        for &(counter, word) in &self.program {
            let now = snapshot.functions[counter as usize];
            let defined = self.kind.readback_mask(counter);
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

    /// Adds the deltas since the previous snapshot and moves the baseline.
    ///
    /// A delta above half the counter's range is ambiguous: a long stretch of counting, or a
    /// read that ran on another CPU whose counter is behind. The TSC settles it: no event
    /// counts more than [`MAX_EVENTS_PER_CYCLE`] per cycle, so a forward step larger than that
    /// many times the cycles elapsed cannot have happened and is taken as a step backwards.
    fn accumulate(&mut self, snapshot: &Snapshot) {
        let cycles = snapshot.tsc.wrapping_sub(self.last_tsc);
        let possible = cycles.saturating_mul(MAX_EVENTS_PER_CYCLE);
        for (value, &(counter, _)) in self.values.iter_mut().zip(&self.slots) {
            let raw = snapshot.counters[counter as usize] & width_mask(self.width);
            let mut delta = counter_delta(self.last_raw[counter as usize], raw, self.width, false);
            if is_backward_step(delta, self.width, possible) {
                self.backward_steps += 1;
                delta = 0;
            }
            *value = value.saturating_add(delta);
            self.last_raw[counter as usize] = raw;
        }
        self.enabled_cycles = self.enabled_cycles.saturating_add(cycles);
        self.last_tsc = snapshot.tsc;
    }

    fn baseline(&mut self, snapshot: &Snapshot) {
        for &(counter, _) in &self.slots {
            self.last_raw[counter as usize] =
                snapshot.counters[counter as usize] & width_mask(self.width);
        }
        self.last_tsc = snapshot.tsc;
    }

    fn enabled_ns(&self) -> u64 {
        self.tsc.nanos(self.enabled_cycles)
    }

    /// Writes 0 to every counter the group holds, counter 0 first (on the P6 that stops
    /// every counter at once). Returns the first error after trying them all.
    fn clear(&self, shared: &mut Shared) -> Result<()> {
        let mut first_error = None;
        for &(counter, _) in self.program.iter().rev() {
            if let Err(errno) = set_function(shared.device.as_mut(), counter, 0) {
                let error = map_errno(
                    &Operation::Set {
                        counter,
                        function: 0,
                    },
                    errno,
                );
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Group for PctrGroup {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn enable(&mut self) -> Result<()> {
        if self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        for &(counter, word) in &self.program {
            if let Err(errno) = set_function(shared.device.as_mut(), counter, word) {
                let error = map_errno(
                    &Operation::Set {
                        counter,
                        function: word,
                    },
                    errno,
                );
                let _ = self.clear(&mut shared);
                return Err(error);
            }
        }
        let snapshot = match self.read_device(&mut shared) {
            Ok(snapshot) => snapshot,
            Err(error) => {
                let _ = self.clear(&mut shared);
                return Err(error);
            }
        };
        self.baseline(&snapshot);
        self.enabled = true;
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.enabled {
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
        self.enabled = false;
        read.and(cleared)
    }

    fn reset(&mut self) -> Result<()> {
        self.values.iter_mut().for_each(|value| *value = 0);
        if !self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        // Write 0, then the function: the counter is zeroed whichever driver revision runs
        // (the current one zeroes only when the function changes).
        for &(counter, word) in &self.program {
            for value in [0, word] {
                set_function(shared.device.as_mut(), counter, value).map_err(|e| {
                    map_errno(
                        &Operation::Set {
                            counter,
                            function: value,
                        },
                        e,
                    )
                })?;
            }
        }
        let snapshot = self.read_device(&mut shared)?;
        self.enabled_cycles = self
            .enabled_cycles
            .saturating_add(snapshot.tsc.wrapping_sub(self.last_tsc));
        self.baseline(&snapshot);
        Ok(())
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.slots.len(), readings.len())?;
        if self.enabled {
            let shared = Arc::clone(&self.shared);
            let mut shared = lock(&shared);
            let snapshot = self.read_device(&mut shared)?;
            self.check_functions(&snapshot)?;
            self.accumulate(&snapshot);
        }
        let ns = self.enabled_ns();
        for (reading, &value) in readings.iter_mut().zip(&self.values) {
            *reading = Reading::new(value, ns, ns);
        }
        Ok(())
    }
}

impl Drop for PctrGroup {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        if self.enabled {
            let _ = self.clear(&mut shared);
        }
        shared.in_use &= !self.owned;
    }
}
