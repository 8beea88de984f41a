//! `PAPI_overflow` on the sampling face: each overflowing event of a set is a sampler
//! (`Chosen::open_sampler`, one sample every `threshold` events) whose overflow callback
//! calls the set's C handler. The handlers live in a fixed table of slots the callback reads
//! without locks (it runs in a signal handler).

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicUsize, Ordering};

use facade::OverflowCallback;

/// How many overflowing events the process may have at once.
pub const SLOTS: usize = 64;

/// One overflowing event: its set, its C handler, and its bit in the overflow vector.
pub struct Slot {
    /// The event set's handle.
    pub set: AtomicI32,
    /// The C handler (`PAPI_overflow_handler_t`) as an address; 0 when the slot is free.
    pub handler: AtomicUsize,
    /// The overflow vector given to the handler: the event's bit (`1 << index in the set`).
    pub vector: AtomicI64,
}

/// The slots.
pub static TABLE: [Slot; SLOTS] = [const {
    Slot {
        set: AtomicI32::new(-1),
        handler: AtomicUsize::new(0),
        vector: AtomicI64::new(0),
    }
}; SLOTS];

/// The profile of each overflow slot: the address of a leaked `Profile` (`PAPI_sprofil`), 0 for none. A
/// profile replaced or turned off is not freed: a sample may be reading it in a signal
/// handler (a few bytes per `PAPI_sprofil` call).
pub static PROFILES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// One event's overflow, as `PAPI_overflow` set it.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The event's code.
    pub code: i32,
    /// Events per overflow.
    pub threshold: u64,
    /// Its slot in [`TABLE`].
    pub slot: usize,
    /// The function the sampler calls (it reads the slot and calls the handler).
    pub callback: OverflowCallback,
}

/// Takes a free slot for `handler`, or `None` when all are taken.
pub fn take_slot(set: i32, handler: usize, vector: i64) -> Option<usize> {
    let slot = TABLE.iter().position(|s| {
        s.handler
            .compare_exchange(0, handler, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    })?;
    TABLE[slot].set.store(set, Ordering::Release);
    TABLE[slot].vector.store(vector, Ordering::Release);
    Some(slot)
}

/// Frees `slot`.
pub fn free_slot(slot: usize) {
    if let Some(s) = TABLE.get(slot) {
        if let Some(p) = PROFILES.get(slot) {
            p.store(0, Ordering::Release);
        }
        s.handler.store(0, Ordering::Release);
    }
}
