//! [`PctrGroup`]: counters programmed through `PCIOCSn` and read with one `PCIOCRD`, taking
//! turns on the counters when an ungrouped set does not fit them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use counterhal_hal::{CounterSet, CountsThrough, Result};
use counterhal_x86::{Multiplexer, Schedule};

use crate::counting::{Functions, Hardware, general};
use crate::shared::{Shared, lock};

/// Counters of one [`PctrBackend::open`](crate::PctrBackend): programmed on enable, cleared
/// on disable, read with one `PCIOCRD`, accumulated across wraparound at the counter width.
///
/// A set opened ungrouped ([`OpenOptions::ungrouped`](counterhal_hal::OpenOptions::ungrouped))
/// with more events than counters, or with events whose allowed counters collide, is split
/// into turns that take the counters in rotation, switched by a timer every
/// [`OpenOptions::multiplex_interval`](counterhal_hal::OpenOptions::multiplex_interval)
/// (see the crate's README and [`counterhal_x86::multiplex`], the multiplexer every
/// software-multiplexing backend shares): an event's value grows and its time running runs
/// only during its turn; the set's time enabled is the same for all.
pub struct PctrGroup {
    multiplexer: Multiplexer<Functions>,
    names: Vec<String>,
    /// (counter, function) of each event, in request order.
    slots: Vec<(u32, u32)>,
}

impl std::fmt::Debug for PctrGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PctrGroup")
            .field("names", &self.names)
            .field("slots", &self.slots)
            .field("enabled", &self.is_enabled())
            .field("turns", &self.turns())
            .finish_non_exhaustive()
    }
}

impl PctrGroup {
    /// A group of events scheduled as `schedule` says, with `words` their function words, over
    /// the device in `shared` driving `hardware`, its rotation timer started every `slice`
    /// when its events take turns. Not yet programmed: [`Group::enable`](counterhal_hal::Group::enable) programs it.
    ///
    /// # Errors
    /// The device's [`start_timer`](crate::PctrDevice::start_timer) errors (no thread for
    /// the timer); the counters are given back then.
    pub(crate) fn start(
        shared: Arc<Mutex<Shared>>,
        hardware: Hardware,
        names: Vec<String>,
        schedule: &Schedule,
        words: &[u32],
        slice: Duration,
    ) -> Result<PctrGroup> {
        let slots = schedule
            .counters
            .iter()
            .zip(words)
            .map(|(counter, &word)| (general(counter), word))
            .collect();
        let functions = Functions::new(Arc::clone(&shared), hardware, schedule, words);
        let multiplexer = Multiplexer::open(functions, schedule, |tick| {
            lock(&shared).device.start_timer(slice, tick)
        })?;
        Ok(PctrGroup {
            multiplexer,
            names,
            slots,
        })
    }

    /// Each event's counter and the function programmed for it, in request order (events of
    /// different turns may share a counter).
    pub fn assignment(&self) -> impl Iterator<Item = (&str, u32, u32)> + '_ {
        self.names
            .iter()
            .zip(&self.slots)
            .map(|(name, &(c, f))| (name.as_str(), c, f))
    }

    /// The counters the group holds, in any turn, the P6's counter-0 gate included.
    pub fn owned_counters(&self) -> CounterSet {
        CounterSet::from_mask(self.multiplexer.with(|functions, _, _| functions.owned()))
    }

    /// Whether it is counting.
    pub fn is_enabled(&self) -> bool {
        self.multiplexer.is_enabled()
    }

    /// How many turns the events take (1: they all count all the time).
    pub fn turns(&self) -> usize {
        self.multiplexer.turns()
    }

    /// The turn of event `index` (request order), `None` when it never rotates.
    pub fn turn_of(&self, index: usize) -> Option<usize> {
        self.multiplexer.turn_of(index)
    }

    /// How many times the rotation has switched turns.
    pub fn switches(&self) -> u64 {
        self.multiplexer.switches()
    }

    /// How many reads found a counter lower than the previous read by more than half its
    /// range, and further ahead than the elapsed cycles allow. That is taken as a step
    /// backwards (the read ran on another CPU, whose counter is behind) and counted as zero,
    /// not as a wrap of nearly the whole range.
    pub fn backward_steps(&self) -> u64 {
        self.multiplexer
            .with(|functions, _, _| functions.backward_steps())
    }
}

impl CountsThrough for PctrGroup {
    type Through = Multiplexer<Functions>;
    fn through(&self) -> &Multiplexer<Functions> {
        &self.multiplexer
    }
    fn through_mut(&mut self) -> &mut Multiplexer<Functions> {
        &mut self.multiplexer
    }
}
