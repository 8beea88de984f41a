//! The overflow signal held back while the library's lock is held: a handler that calls the
//! library (PAPI's `overflow_one_and_read` reads the set from its handler, as PAPI allows)
//! would otherwise wait forever for the lock the thread it interrupted holds.

/// The overflow signal blocked on this thread until the value drops (which restores the mask
/// it found; a signal that came meanwhile is queued, a real-time one, and delivered then).
pub struct Held(libc::sigset_t);

/// Blocks the overflow signal `signal` on this thread while the result lives; `None` for 0
/// (no sampler armed yet: no overflow signal can come, and the call pays no system call).
pub fn hold(signal: i32) -> Option<Held> {
    match signal {
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
