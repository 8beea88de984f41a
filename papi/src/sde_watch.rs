//! The overflow of software-defined counters a library creates (`papi_sde_create_counter`):
//! libsde tells libpapi each new value of such a counter (`papi_sde_inc_counter` calls
//! `papi_sde_check_overflow_status`), and the set that overflows on it calls its handler when
//! the value passes the next multiple of the threshold, as PAPI 7.0's `sde` component does
//! (src/components/sde/sde.c). The watches are kept apart from the library's lock: libsde
//! calls in holding its own lock, which a library call may be waiting for.

use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

/// One counter a set overflows on.
struct Watch {
    /// The set's handle.
    set: i32,
    /// libsde's id of the counter.
    counter: u32,
    /// Counts per overflow.
    threshold: i64,
    /// The value past which the handler is called next: the threshold at first, then the
    /// next multiple of it above the value that overflowed (PAPI 7.0's `deadline`).
    deadline: i64,
    /// The overflow slot holding the set's handler and the event's bit.
    slot: usize,
    /// The thread that started the set, while it runs: only its increments count, as
    /// PAPI 7.0 looks at the running set of the incrementing thread.
    running: Option<ThreadId>,
}

/// The watches of software-defined counters, in the process's one value beside the library's
/// lock (`unlocked::UNLOCKED`), behind a lock of their own: libsde calls in
/// (`papi_sde_check_overflow_status`) from the counting library's threads holding its own
/// lock, while a call holding the library's lock may be waiting for libsde's (a read of an
/// `sde` set); taking the library's lock here would deadlock the two (this module's note).
pub struct Watches(Mutex<Vec<Watch>>);

impl Watches {
    /// None.
    pub(crate) const fn new() -> Self {
        Watches(Mutex::new(Vec::new()))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Watch>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Set `set` overflows on `counter` every `threshold` counts, calling the handler of
    /// `slot`.
    pub fn watch(&self, set: i32, counter: u32, threshold: i64, slot: usize) {
        let mut watches = self.lock();
        watches.retain(|w| w.slot != slot);
        watches.push(Watch {
            set,
            counter,
            threshold,
            deadline: threshold,
            slot,
            running: None,
        });
    }

    /// The watch of overflow slot `slot` ends (its overflow was turned off or its event
    /// removed).
    pub fn forget(&self, slot: usize) {
        self.lock().retain(|w| w.slot != slot);
    }

    /// Set `set` starts (on this thread) or stops.
    pub fn run(&self, set: i32, running: bool) {
        let thread = running.then(|| std::thread::current().id());
        for w in self.lock().iter_mut().filter(|w| w.set == set) {
            w.running = thread;
        }
    }

    /// Whether counter `counter`, now at `latest` on this thread, overflows a running set: the
    /// overflow slot holding its handler, the deadline moved past `latest`.
    pub fn overflowed(&self, counter: u32, latest: i64) -> Option<usize> {
        let thread = std::thread::current().id();
        let mut watches = self.lock();
        let w = watches
            .iter_mut()
            .find(|w| w.counter == counter && w.running == Some(thread))?;
        if latest <= w.deadline || w.threshold <= 0 {
            return None;
        }
        // The next multiple of the threshold, so that no error adds up.
        w.deadline = w.threshold * (latest / w.threshold) + w.threshold;
        Some(w.slot)
    }
}
