//! `PAPI_overflow` on the sampling face: each overflowing event of a set is a sampler
//! (`Chosen::open_sampler`, one sample every `threshold` events) whose overflow callback
//! calls the set's C handler. The handlers live in a fixed table of slots the callback reads
//! without locks (it runs in a signal handler).
//!
//! As PAPI 7.0's, the handler is the set's, not an event's: each `PAPI_overflow` call gives
//! the set the handler it names, for every event that overflows in it ([`Table::set_handler`] on
//! each of the set's slots), NULL included once the set overflows. PAPI then calls the NULL
//! pointer at the next overflow and the process dies of SIGSEGV; ours calls nothing.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicUsize, Ordering};

use facade::OverflowCallback;

/// How many overflowing events the process may have at once.
pub const SLOTS: usize = 64;

/// One overflowing event: its set, its C handler, its bit in the overflow vector, and its
/// profile where it is profiled.
pub struct Slot {
    /// The event set's handle; -1 when the slot is free.
    pub set: AtomicI32,
    /// The set's C handler (`PAPI_overflow_handler_t`) as an address: 0 for none (NULL),
    /// [`PROFILE_HANDLER`] for a profiled event's.
    pub handler: AtomicUsize,
    /// The overflow vector given to the handler: the event's bit (`1 << index in the set`).
    pub vector: AtomicI64,
    /// The event's profile: the address of a leaked `Profile` (`PAPI_sprofil`), 0 for none. A
    /// profile replaced or turned off is not freed: a sample may be reading it in a signal
    /// handler (a few bytes per `PAPI_sprofil` call).
    pub profile: AtomicUsize,
}

/// One event's overflow, as `PAPI_overflow` set it.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The event's code.
    pub code: i32,
    /// Events per overflow.
    pub threshold: u64,
    /// Its slot in the overflow [`Table`].
    pub slot: usize,
    /// The function the sampler calls (it reads the slot and calls the handler).
    pub callback: OverflowCallback,
}

/// The handler `PAPI_sprofil` gives the overflow of a profiled event: the address of no C
/// function (PAPI's `_papi_hwi_dummy_handler`). The dispatch adds a profiled event's samples
/// to its buffers; an event of the set that is not profiled then calls nothing.
pub const PROFILE_HANDLER: usize = usize::MAX;

/// The slots, in the process's one value beside the library's lock
/// (`unlocked::UNLOCKED`): the overflow signal's handler reads and writes them.
pub struct Table([Slot; SLOTS]);

impl Table {
    /// Every slot free.
    pub(crate) const fn new() -> Self {
        Table(
            [const {
                Slot {
                    set: AtomicI32::new(-1),
                    handler: AtomicUsize::new(0),
                    vector: AtomicI64::new(0),
                    profile: AtomicUsize::new(0),
                }
            }; SLOTS],
        )
    }

    /// Slot `slot`, where there is one.
    pub fn get(&self, slot: usize) -> Option<&Slot> {
        self.0.get(slot)
    }

    /// Takes a free slot for event set `set` (`set` >= 0) with `handler`, or `None` when all are
    /// taken.
    pub fn take_slot(&self, set: i32, handler: usize, vector: i64) -> Option<usize> {
        let slot = self.0.iter().position(|s| {
            s.set
                .compare_exchange(-1, set, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        self.0[slot].vector.store(vector, Ordering::Release);
        self.0[slot].handler.store(handler, Ordering::Release);
        Some(slot)
    }

    /// Gives `slot` the handler `handler` (the set's, as the last `PAPI_overflow` named it).
    pub fn set_handler(&self, slot: usize, handler: usize) {
        if let Some(s) = self.0.get(slot) {
            s.handler.store(handler, Ordering::Release);
        }
    }

    /// The C handler to call at an overflow of `slot`, with the set and the overflow vector to
    /// give it; `None` for a free slot, a NULL handler and a profiled event's.
    pub fn handler_of(&self, slot: usize) -> Option<(usize, i32, i64)> {
        let s = self.0.get(slot)?;
        let handler = s.handler.load(Ordering::Acquire);
        let set = s.set.load(Ordering::Acquire);
        if handler == 0 || handler == PROFILE_HANDLER || set < 0 {
            return None;
        }
        Some((handler, set, s.vector.load(Ordering::Acquire)))
    }

    /// Whether `slot` is a profiled event's (`PAPI_profil`, `PAPI_sprofil`).
    pub fn profiles(&self, slot: usize) -> bool {
        self.0
            .get(slot)
            .is_some_and(|s| s.profile.load(Ordering::Acquire) != 0)
    }

    /// Frees `slot`.
    pub fn free_slot(&self, slot: usize) {
        if let Some(s) = self.0.get(slot) {
            s.profile.store(0, Ordering::Release);
            s.handler.store(0, Ordering::Release);
            s.set.store(-1, Ordering::Release);
        }
    }
}
