//! The read path without the library's lock: each started event set is published by handle
//! (a [`SharedReads`] of the facade), and `PAPI_read`, `PAPI_read_ts` and `PAPI_accum` read a
//! published set without locking or allocating, so that a signal handler may call them, a
//! profiler's `SIGPROF` handler on top of a `PAPI_read` of the same set included (PAPI 7.0's
//! read takes no lock either). A set that is not published (never started, being changed,
//! overflowing, of a component whose counters the library reads itself) is read under the
//! lock, as every other call.
//!
//! The handles' slots live in segments that are allocated once and never freed (the first
//! holds 64 handles, each next one twice as many), so that a read finds its set's slot with
//! an atomic load, whatever the library does meanwhile.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use counterhal_hal::{EventSet, Reading};
use facade::AnyGroup;
use facade::advanced::{SharedReadError, SharedReads};

use crate::codes::{ESYS, OK};

/// The handles the first segment holds.
const FIRST: usize = 64;

/// Segments enough for every handle a C `int` names.
const SEGMENTS: usize = 26;

/// One handle's published set, whether its counts are scaled (a multiplexed set's), and the
/// process it was published in (the library's count of forks then: a forked child's read of
/// its parent's set goes to the lock, which answers `PAPI_EMISC`).
#[derive(Debug, Default)]
pub struct Slot {
    reads: SharedReads,
    multiplexed: AtomicBool,
    generation: AtomicU64,
}

/// The handles' slots by segment, in the process's one value beside the library's lock
/// (`unlocked::UNLOCKED`): `PAPI_read` of a started set reads its slot without that
/// lock, a signal handler's included.
pub struct Table([OnceLock<Box<[Slot]>>; SEGMENTS]);

/// The segment holding `handle` and its index there: segment `k` holds the handles from
/// `FIRST * (2^k - 1)`, `FIRST << k` of them.
fn place(handle: usize) -> Option<(usize, usize)> {
    let segment = (handle / FIRST + 1).ilog2() as usize;
    let start = FIRST * ((1 << segment) - 1);
    (segment < SEGMENTS).then_some((segment, handle - start))
}

impl Slot {
    /// Publishes `set` (scaled reads where `multiplexed`), made in the process `generation`
    /// counts; `false` where it cannot be read without the lock (see
    /// [`SharedReads::publish`]).
    pub fn publish(
        &self,
        set: &std::sync::Arc<EventSet<AnyGroup>>,
        multiplexed: bool,
        generation: u64,
    ) -> bool {
        self.multiplexed.store(multiplexed, Ordering::Release);
        self.generation.store(generation, Ordering::Release);
        self.reads.publish(set)
    }

    /// Withdraws the published set (see [`SharedReads::withdraw`]): `false` when this thread
    /// is inside a read of it, which the caller (a signal handler) must not wait for.
    pub fn withdraw(&self) -> bool {
        self.reads.withdraw()
    }
}

/// PAPI's count of one reading: the scaled estimate in a multiplexed set (the count where the
/// event never ran), the count otherwise.
pub fn value(reading: &Reading, multiplexed: bool) -> i64 {
    if multiplexed {
        reading.scaled().unwrap_or(reading.value) as i64
    } else {
        reading.value as i64
    }
}

impl Table {
    /// No segment allocated yet.
    pub(crate) const fn new() -> Self {
        Table([const { OnceLock::new() }; SEGMENTS])
    }

    /// The slot of `handle`, its segment allocated where it is not yet (a call that creates a
    /// set, under the library's lock: never from a read).
    pub fn slot_of(&'static self, handle: usize) -> &'static Slot {
        let (segment, index) = place(handle).unwrap_or((SEGMENTS - 1, 0));
        let slots = self.0[segment]
            .get_or_init(|| (0..FIRST << segment).map(|_| Slot::default()).collect());
        &slots[index]
    }

    /// Reads set `handle` where it is published in this process (`generation`, the library's
    /// count of forks now), handing each count to `put` with its index: `Some(PAPI_OK)`, or
    /// `Some(PAPI_ESYS)` where the system's read failed; `None` where the set is not
    /// published, is being changed or is a parent's, for the caller to read it under the lock.
    /// No lock taken, nothing allocated.
    pub fn read(
        &self,
        handle: i32,
        generation: u64,
        put: &mut impl FnMut(usize, i64),
    ) -> Option<i32> {
        let (segment, index) = place(usize::try_from(handle).ok()?)?;
        let slot = self.0[segment].get()?.get(index)?;
        if slot.generation.load(Ordering::Acquire) != generation {
            return None;
        }
        let read = slot.reads.read(|readings| {
            let multiplexed = slot.multiplexed.load(Ordering::Acquire);
            for (i, reading) in readings.iter().enumerate() {
                put(i, value(reading, multiplexed));
            }
        });
        match read {
            Ok(()) => Some(OK),
            Err(SharedReadError::Read(_)) => Some(ESYS),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FIRST, place};

    /// Every handle lands in one slot, the segments back to back.
    #[test]
    fn handles_fill_the_segments_in_order() {
        assert_eq!(place(0), Some((0, 0)));
        assert_eq!(place(FIRST - 1), Some((0, FIRST - 1)));
        assert_eq!(place(FIRST), Some((1, 0)));
        assert_eq!(place(3 * FIRST - 1), Some((1, 2 * FIRST - 1)));
        assert_eq!(place(3 * FIRST), Some((2, 0)));
        let last = i32::MAX as usize;
        let (segment, index) = place(last).unwrap();
        assert!(index < FIRST << segment, "{segment} {index}");
    }
}
