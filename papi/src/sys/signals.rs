//! The overflow signal held back while the library's lock is held: a handler that calls the
//! library (PAPI's `overflow_one_and_read` reads the set from its handler, as PAPI allows)
//! would otherwise wait forever for the lock the thread it interrupted holds.

use std::sync::atomic::{AtomicI32, Ordering};

/// The overflow signal, set once a sampler has been armed (0 until then): until then no
/// overflow signal can come, and a call on the library pays no system call for this.
///
/// Static beside the lock: read by every call before it takes the lock.
static ARMED: AtomicI32 = AtomicI32::new(0);

/// Notes that overflow signals may come from now on, as `signal` (the backend's sampling
/// capability's; `None`: none comes).
pub fn armed(signal: Option<i32>) {
    if let Some(signal) = signal {
        ARMED.store(signal, Ordering::Relaxed);
    }
}

/// The overflow signal blocked on this thread until the value drops (which restores the mask
/// it found; a signal that came meanwhile is queued, a real-time one, and delivered then).
pub struct Held(libc::sigset_t);

/// Blocks the overflow signal on this thread while the result lives, once a sampler has been
/// armed; `None` before, or where the backend has no overflow signal.
pub fn hold() -> Option<Held> {
    match ARMED.load(Ordering::Relaxed) {
        0 => None,
        signal => block(signal),
    }
}

fn block(signal: i32) -> Option<Held> {
    // SAFETY: sigset_t is plain data; an all-zero one is a valid value to initialise.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; pthread_sigmask overwrites it.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t for sigemptyset to write.
    unsafe { libc::sigemptyset(&mut set) };
    // SAFETY: `set` is initialised; sigaddset refuses a signal number out of range.
    unsafe { libc::sigaddset(&mut set, signal) };
    // SAFETY: `set` is read and `old` written, both valid sigset_t for the call.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) } != 0 {
        return None;
    }
    Some(Held(old))
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: restores the mask `block` saved, a valid sigset_t.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}
