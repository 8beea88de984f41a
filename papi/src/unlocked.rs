//! The process's PAPI state that the library's lock (`library`'s `PROCESS`) cannot hold, in
//! one static value beside it ([`UNLOCKED`]): what a signal handler reaches, and what a call
//! reads or takes without waiting for that lock. Each field says why it is here; all else is
//! in the process's value behind the lock.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use counterhal_system::System;

use crate::overflow;
use crate::profile;
use crate::release::ReleaseOnce;
use crate::sde_watch;
use crate::shared_reads;
use crate::sys::published::Published;
use crate::sys::signals::{self, Held};

/// The state reached without the library's lock (see the module's note).
pub struct Unlocked {
    /// `PAPI_is_initialized`'s value: 0, or `PAPI_LOW_LEVEL_INITED` (1) with
    /// `PAPI_HIGH_LEVEL_INITED` (2) and `PAPI_THREAD_LEVEL_INITED` (4). Without the lock:
    /// `PAPI_is_initialized` and the calls that answer `PAPI_ENOINIT` read it without
    /// waiting, a signal handler's included (one that interrupted a call holding the lock is
    /// refused the lock).
    pub init_state: AtomicI32,
    /// The release the first successful `PAPI_library_init` chose. Without the lock: every
    /// call of the C interface reads it to choose a layout, a signal handler's included, and
    /// it outlives `PAPI_shutdown`.
    pub chosen_release: ReleaseOnce,
    /// The release named by the file the library was loaded from (before any
    /// `PAPI_library_init`, the one spoken). Without the lock: read as the chosen one is.
    pub loaded_release: ReleaseOnce,
    /// `PAPI_thread_init`'s function, as an address (0 for none). Without the lock:
    /// `PAPI_thread_id` calls it from any thread, a signal handler's included.
    pub thread_id_fn: AtomicUsize,
    /// The overflow signal, set once a sampler has been armed (0 until then). Without the
    /// lock: every call reads it before it takes the lock, to hold the signal back
    /// (`hold_overflow_signal`).
    pub overflow_signal: AtomicI32,
    /// The overflowing events' handlers. Without the lock: the overflow signal's handler reads
    /// and writes them, and it may have interrupted a call that holds the lock.
    pub overflows: overflow::Table,
    /// The started sets published for reads. Without the lock: `PAPI_read` of a started set
    /// reads its slot without it, a signal handler's included.
    pub reads: shared_reads::Table,
    /// PAPI's generator for `PAPI_PROFIL_RANDOM`. Without the lock: drawn in the overflow
    /// signal's handler, for every sample.
    pub profile_generator: profile::Generator,
    /// `PAPI_lock`'s and `PAPI_unlock`'s user locks (`PAPI_USR1_LOCK`, `PAPI_USR2_LOCK`), spin
    /// locks. Without the library's lock: a program takes them from any thread at any time,
    /// holding them across its own calls on the library.
    pub user_locks: [AtomicBool; 2],
    /// The watches of software-defined counters, behind a lock of their own. Without the
    /// library's lock: libsde calls in holding its own lock, while a call holding the
    /// library's may be waiting for libsde's ([`sde_watch`]).
    pub sde_watches: sde_watch::Watches,
    /// The system the library reads its facts from (this machine's), made once
    /// ([`system`]). Without the lock: the calls that read facts with no library value at
    /// hand (`PAPI_get_dmem_info`, the hardware facts) take it from here, a signal handler's
    /// included.
    system: Published<System>,
}

/// The process's state reached without the library's lock.
///
/// Static beside the library's lock: what a signal handler or a call that must not wait for
/// that lock reaches (each field says why).
pub static UNLOCKED: Unlocked = Unlocked {
    init_state: AtomicI32::new(0),
    chosen_release: ReleaseOnce::new(),
    loaded_release: ReleaseOnce::new(),
    thread_id_fn: AtomicUsize::new(0),
    overflow_signal: AtomicI32::new(0),
    overflows: overflow::Table::new(),
    reads: shared_reads::Table::new(),
    profile_generator: profile::Generator::new(),
    user_locks: [AtomicBool::new(false), AtomicBool::new(false)],
    sde_watches: sde_watch::Watches::new(),
    system: Published::new(),
};

/// The system the library reads its facts from: this machine's, made at the first call that
/// asks (`PAPI_library_init`, or a fact asked before it) and the same for the process. No
/// lock taken.
pub fn system() -> &'static System {
    UNLOCKED.system.get_or_publish(System::host)
}

/// `PAPI_is_initialized`'s value ([`Unlocked::init_state`]).
pub fn init_state() -> i32 {
    UNLOCKED.init_state.load(Ordering::SeqCst)
}

/// Blocks the overflow signal on this thread while the result lives, once a sampler has been
/// armed; `None` before, or where the backend has no overflow signal.
pub(crate) fn hold_overflow_signal() -> Option<Held> {
    signals::hold(UNLOCKED.overflow_signal.load(Ordering::Relaxed))
}
